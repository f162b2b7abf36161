#!/usr/bin/env python3
"""horovod_step.py - the gradient exchange of one training step of a
ResNet-50-shaped model (161 float32 gradients, 25.6 M values) through
Horovod's API served by matex, against the same exchange through
libmatexcomm's own C API, in the same run, on the same buffers.

    MATEX_HOROVOD=1 mpirun -np 2 python bench/scripts/horovod_step.py [--iters 20] [--json out.json]

- "horovod": hvd.DistributedOptimizer(torch.optim.SGD(...)).synchronize(),
  which a Horovod script's optimizer.step() runs, with every gradient ready
  and none submitted yet (no backward pass ran): it submits them in one call
  and waits on each.
- "capi": the 161 gradients submitted to the same engine in one
  matex_engine_submit call (in place, op average), then a wait on each, from
  ctypes. This is matex's own API with no Python per tensor.
- "horovod-hooks": what a backward pass does: the optimizer's gradient hook
  runs for each parameter in reverse order (one submission each), then
  synchronize() waits.
- "capi-each": matex's own API the same way, one matex_engine_submit call
  per gradient, in reverse order, then a wait on each.

Both run alternately in each iteration, after a barrier; the time of an
iteration is the maximum over ranks; the figure is the median over
iterations. Before timing, each path's result is checked exactly: rank r's
gradient i holds (r + 1) * ((j % 251) + 1) at element j, whose mean over the
ranks is exact in float32.
"""
import argparse
import ctypes
import json
import statistics
import time

import torch

import horovod.torch as hvd
from horovod.common import engine as engine_module


def resnet50_shapes():
    """The parameter shapes of torchvision's ResNet-50 (161 tensors, 25,557,032 values)."""
    shapes = [(64, 3, 7, 7), (64,), (64,)]
    inplanes = 64
    for planes, blocks in ((64, 3), (128, 4), (256, 6), (512, 3)):
        for block in range(blocks):
            shapes += [(planes, inplanes, 1, 1), (planes,), (planes,), (planes, planes, 3, 3), (planes,), (planes,),
                       (planes * 4, planes, 1, 1), (planes * 4,), (planes * 4,)]
            if block == 0:
                shapes += [(planes * 4, inplanes, 1, 1), (planes * 4,), (planes * 4,)]
            inplanes = planes * 4
    return shapes + [(1000, 2048), (1000,)]


def fill(grads, source):
    for g, s in zip(grads, source):
        g.copy_(s)


def capi_exchange(grads, engine, iteration, batched):
    ops = (engine_module._TensorOp * len(grads))()
    names = [f"capi.{i}".encode() for i in range(len(grads))]  # the same names every step, as the optimizer's
    for i, g in enumerate(grads):
        ops[i] = engine_module._TensorOp(names[i], engine_module.ALLREDUCE, engine_module._IN_PLACE, g.data_ptr(),
                                         g.numel(), 0, engine_module.DTYPES["float32"], engine_module.OPS["average"],
                                         0, 1.0, 1.0, None, None)
    handles = (ctypes.c_void_p * len(grads))()
    if batched:
        engine.check(engine.lib.matex_engine_submit(engine._engine, ops, len(grads), handles), "submit")
    else:
        for i in reversed(range(len(grads))):
            engine.check(engine.lib.matex_engine_submit(engine._engine, ctypes.byref(ops[i]), 1,
                                                        ctypes.byref(handles, i * ctypes.sizeof(ctypes.c_void_p))),
                         "submit")
    for i in range(len(grads)):
        handle = ctypes.c_void_p(handles[i])
        status = engine.lib.matex_request_wait(handle)
        engine.lib.matex_request_free(ctypes.byref(handle))
        engine.check(status, "wait")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--json")
    args = parser.parse_args()
    torch.set_num_threads(1)
    hvd.init()
    rank, size = hvd.rank(), hvd.size()
    shapes = resnet50_shapes()
    params = [torch.nn.Parameter(torch.zeros(s)) for s in shapes]
    model = torch.nn.Module()
    model.params = torch.nn.ParameterList(params)
    optimizer = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.0),
                                         named_parameters=model.named_parameters())
    pattern = [((torch.arange(p.numel()) % 251) + 1).float().reshape(p.shape) for p in params]
    source = [(rank + 1) * q for q in pattern]
    expected = [(size + 1) / 2 * q for q in pattern]
    grads = [torch.empty_like(p) for p in params]
    for p, g in zip(params, grads):
        p.grad = g
    engine = engine_module.engine

    def horovod_exchange(iteration):
        optimizer.synchronize()

    def horovod_hooks_exchange(iteration):
        for p in reversed(params):
            optimizer._on_gradient(p)  # what autograd's post-accumulate-grad hook calls
        optimizer.synchronize()

    paths = {"horovod": horovod_exchange, "capi": lambda i: capi_exchange(grads, engine, i, True),
             "horovod-hooks": horovod_hooks_exchange, "capi-each": lambda i: capi_exchange(grads, engine, i, False)}
    for name, run in paths.items():  # exactness, before any timing
        fill(grads, source)
        run(-1)
        for i, (g, e) in enumerate(zip(grads, expected)):
            if not torch.equal(g, e):
                raise SystemExit(f"{name}: gradient {i} of shape {tuple(g.shape)} is not the exact mean")
    times = {name: [] for name in paths}
    for iteration in range(args.warmup + args.iters):
        for name, run in paths.items():
            fill(grads, source)
            hvd.barrier()
            start = time.perf_counter()
            run(iteration)
            elapsed = time.perf_counter() - start
            if iteration >= args.warmup:
                times[name].append(elapsed)
    everyone = hvd.allgather_object(times)
    result = {}
    for name in paths:
        per_iteration = [max(t[name][i] for t in everyone) for i in range(args.iters)]
        result[name] = {"median_ms": 1e3 * statistics.median(per_iteration),
                        "min_ms": 1e3 * min(per_iteration), "max_ms": 1e3 * max(per_iteration)}
    if rank == 0:
        values = sum(p.numel() for p in params)
        print(f"# ResNet-50-shaped gradients: {len(params)} tensors, {values} float32 values, {size} ranks, "
              f"{args.iters} iterations")
        print(f"# {'path':>13} {'median ms':>10} {'min ms':>8} {'max ms':>8}")
        for name, r in result.items():
            print(f"  {name:>13} {r['median_ms']:>10.2f} {r['min_ms']:>8.2f} {r['max_ms']:>8.2f}")
        ratios = {"horovod / capi": result["horovod"]["median_ms"] / result["capi"]["median_ms"],
                  "horovod-hooks / capi-each": result["horovod-hooks"]["median_ms"] / result["capi-each"]["median_ms"]}
        for name, ratio in ratios.items():
            print(f"# {name}: {ratio:.3f}")
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"ranks": size, "tensors": len(params), "values": values, "paths": result,
                           "ratios": ratios}, f, indent=1)


if __name__ == "__main__":
    main()
