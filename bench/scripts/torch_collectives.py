#!/usr/bin/env python3
"""torch_collectives.py - torch.distributed collectives on matex and gloo, in
the same run, timed by the same code, in the conventions of nccl-tests.

    mpirun -np 2 python bench/scripts/torch_collectives.py [--json out.json] [--png out.png]

Backends: "matex" (the default process group) and "gloo" (a second group over
the same ranks); "capi" is libmatexcomm's own C API called through ctypes on
the same buffers, the figure the binding is measured against. Measured:

- allreduce, float32 sum in place, 4 B to 256 MiB by factors of 4;
- allgather and reduce_scatter at 1, 16 and 64 MiB (the size of the whole
  gathered / reduced buffer);
- a DDP training step of a CPU MLP with about 25 M parameters.

Time: the median of per-iteration times on each rank, the maximum over
ranks. busbw = algbw * 2(n-1)/n for allreduce, algbw * (n-1)/n for the others.
Every result is checked outside the timed loop against its exact value
(rank r contributes (r+1)*((i % 251)+1)); any wrong result exits with 1.

torch's flight recorder is on by default: gloo and matex record each
collective themselves (a Python traceback and one entry, about a microsecond).
TORCH_FR_BUFFER_SIZE=0 (pass it to every rank: mpirun -x TORCH_FR_BUFFER_SIZE)
turns it off for both; the header says which.
Finds matex_torch installed, or in --build-dir (default build/) python/.
"""
import argparse
import ctypes
import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def import_backend(build_dir):
    try:
        import matex_torch  # noqa: F401
    except ImportError:
        sys.path.insert(0, os.path.join(build_dir, "python"))
        import matex_torch  # noqa: F401
    import matex_torch
    matex_torch.register()
    return matex_torch


def sizes(low, high):
    size = low
    while size <= high:
        yield size
        size *= 4


def iterations(nbytes, budget_bytes, least, most):
    return max(least, min(most, budget_bytes // max(nbytes, 1)))


class CApi:
    """matex_allreduce etc. on a communicator of its own over MPI_COMM_WORLD."""

    def __init__(self, matex_torch):
        from matex import _libraries  # installed beside matex_torch: libmatexcomm in matex/lib
        self.lib = ctypes.CDLL(_libraries.LIBMATEXCOMM)
        self.comm = ctypes.c_void_p()
        if self.lib.matex_init(ctypes.byref(self.comm)) != 0:
            raise RuntimeError("matex_init failed")

    def allreduce(self, tensor):
        return self.lib.matex_allreduce(self.comm, ctypes.c_void_p(1), ctypes.c_void_p(tensor.data_ptr()),
                                        ctypes.c_size_t(tensor.numel()), 6, 0)

    def close(self):
        self.lib.matex_finalize(ctypes.byref(self.comm))


def timed(run, iters, warmup, sync):
    for _ in range(warmup):
        run()
    sync()
    times = []
    for _ in range(iters):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def slowest(torch, dist, seconds):
    t = torch.tensor([seconds], dtype=torch.float64)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return t.item()


def pattern(torch, count, rank):
    i = torch.arange(count, dtype=torch.int64)
    return ((i % 251) + 1).to(torch.float32) * (rank + 1)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build-dir", default=os.path.join(os.path.dirname(os.path.dirname(HERE)), "build"))
    parser.add_argument("--max-bytes", type=int, default=256 << 20)
    parser.add_argument("--json")
    parser.add_argument("--png")
    parser.add_argument("--no-ddp", action="store_true")
    parser.add_argument("--ddp-steps", type=int, default=6)
    args = parser.parse_args()

    matex_torch = import_backend(args.build_dir)
    import torch
    import torch.distributed as dist
    dist.init_process_group("matex")
    rank, n = dist.get_rank(), dist.get_world_size()
    groups = {"matex": dist.group.WORLD, "gloo": dist.new_group(backend="gloo")}
    capi = CApi(matex_torch)
    failures = []
    records = []

    def check(name, backend, got, want):
        if not torch.equal(got, want):
            failures.append(f"{name} {backend} {got.numel() * 4} B: wrong result on rank {rank}")

    # ---- allreduce sweep ----
    for nbytes in sizes(4, args.max_bytes):
        count = nbytes // 4
        want = pattern(torch, count, 0) * (n * (n + 1) / 2)
        iters = iterations(nbytes, 1 << 30, 5, 200)
        row = {"collective": "allreduce", "bytes": nbytes, "iters": iters}
        for backend in ("capi", "matex", "gloo"):
            t = pattern(torch, count, rank)
            if backend == "capi":
                status = capi.allreduce(t)
                if status != 0:
                    failures.append(f"capi allreduce returned {status}")
                check("allreduce", backend, t, want)
                zeros = torch.zeros(count)
                seconds = timed(lambda: capi.allreduce(zeros), iters, 3, lambda: dist.barrier())
            else:
                group = groups[backend]
                dist.all_reduce(t, group=group)
                check("allreduce", backend, t, want)
                zeros = torch.zeros(count)
                seconds = timed(lambda: dist.all_reduce(zeros, group=group), iters, 3,
                                lambda: dist.barrier(group=group))
                if zeros.abs().sum().item() != 0:
                    failures.append(f"allreduce {backend} {nbytes} B: the timed zeros changed")
            seconds = slowest(torch, dist, seconds)
            algbw = nbytes / seconds / 1e9
            row[backend] = {"us": seconds * 1e6, "algbw": algbw, "busbw": algbw * 2 * (n - 1) / n}
        records.append(row)

    # ---- allgather and reduce_scatter ----
    for nbytes in (1 << 20, 16 << 20, 64 << 20):
        if nbytes > args.max_bytes:
            continue
        part = nbytes // 4 // n
        iters = iterations(nbytes, 1 << 29, 5, 50)
        for collective in ("allgather", "reduce_scatter"):
            row = {"collective": collective, "bytes": part * 4 * n, "iters": iters}
            for backend in ("matex", "gloo"):
                group = groups[backend]
                if collective == "allgather":
                    mine = pattern(torch, part, rank)
                    out = torch.empty(part * n)
                    dist.all_gather_into_tensor(out, mine, group=group)
                    check(collective, backend, out, torch.cat([pattern(torch, part, r) for r in range(n)]))
                    run = lambda: dist.all_gather_into_tensor(out, mine, group=group)  # noqa: E731
                else:
                    full = pattern(torch, part * n, rank)
                    out = torch.empty(part)
                    dist.reduce_scatter_tensor(out, full, group=group)
                    expected = pattern(torch, part * n, 0)[rank * part:(rank + 1) * part] * (n * (n + 1) / 2)
                    check(collective, backend, out, expected)
                    run = lambda: dist.reduce_scatter_tensor(out, full, group=group)  # noqa: E731
                seconds = slowest(torch, dist, timed(run, iters, 2, lambda: dist.barrier(group=group)))
                algbw = part * 4 * n / seconds / 1e9
                row[backend] = {"us": seconds * 1e6, "algbw": algbw, "busbw": algbw * (n - 1) / n}
            records.append(row)

    # ---- a DDP step of a ~25 M parameter MLP ----
    ddp = {}
    if not args.no_ddp:
        from torch.nn.parallel import DistributedDataParallel as DDP
        for backend in ("matex", "gloo"):
            torch.manual_seed(0)
            layers = []
            for _ in range(4):
                layers += [torch.nn.Linear(2500, 2500), torch.nn.ReLU()]
            model = DDP(torch.nn.Sequential(*layers), process_group=groups[backend])
            parameters = sum(p.numel() for p in model.parameters())
            opt = torch.optim.SGD(model.parameters(), lr=1e-4)
            x = torch.randn(16, 2500)

            def step():
                opt.zero_grad()
                model(x).square().mean().backward()
                opt.step()

            seconds = slowest(torch, dist, timed(step, args.ddp_steps, 2, lambda: dist.barrier()))
            ddp[backend] = {"step_ms": seconds * 1e3, "parameters": parameters}
            del model, opt

    capi.close()
    if rank == 0:
        report(records, ddp, n, args)
    ok = torch.tensor([0 if failures else 1])
    dist.all_reduce(ok, op=dist.ReduceOp.MIN)
    for failure in failures:
        print("FAIL:", failure, file=sys.stderr)
    dist.destroy_process_group()
    sys.exit(0 if ok.item() == 1 else 1)


def flight_recorder_entries():
    """The flight recorder's buffer size as torch reads it (0: off)."""
    for name in ("TORCH_FR_BUFFER_SIZE", "TORCH_NCCL_TRACE_BUFFER_SIZE"):
        if os.environ.get(name):
            return int(os.environ[name])
    return 2000


def report(records, ddp, n, args):
    entries = flight_recorder_entries()
    print(f"# torch.distributed on {n} ranks: matex vs gloo (capi: libmatexcomm's C API on the same buffers)")
    print(f"# torch's flight recorder: {'on (%d entries)' % entries if entries > 0 else 'off'}, for both backends")
    print(f"# {'collective':>14} {'bytes':>10} {'iters':>6} | {'capi us':>9} | {'matex us':>9} {'busbw':>7} | "
          f"{'gloo us':>9} {'busbw':>7} | {'speed-up':>8} {'bw ratio':>8} {'matex/capi':>10}")
    for row in records:
        capi = row.get("capi")
        m, g = row["matex"], row["gloo"]
        print(f"  {row['collective']:>14} {row['bytes']:>10} {row['iters']:>6} | "
              f"{capi['us'] if capi else float('nan'):>9.2f} | {m['us']:>9.2f} {m['busbw']:>7.3f} | "
              f"{g['us']:>9.2f} {g['busbw']:>7.3f} | {g['us'] / m['us']:>7.1f}x {m['busbw'] / g['busbw']:>7.2f}x "
              f"{(m['us'] / capi['us']) if capi else float('nan'):>10.2f}")
    for backend, figures in ddp.items():
        print(f"# DDP step, {figures['parameters'] / 1e6:.1f} M parameters, {backend}: {figures['step_ms']:.1f} ms")
    if args.json:
        with open(args.json, "w") as handle:
            json.dump({"ranks": n, "flight_recorder_entries": entries, "records": records, "ddp": ddp}, handle,
                      indent=1)
    if args.png:
        try:
            import matplotlib
            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError:
            print("# --png needs matplotlib (pip install matplotlib); no plot written", file=sys.stderr)
            return
        sweep = [r for r in records if r["collective"] == "allreduce"]
        figure, axes = plt.subplots(figsize=(7, 4))
        for backend, color in (("matex", "tab:blue"), ("gloo", "tab:orange"), ("capi", "tab:green")):
            axes.plot([r["bytes"] for r in sweep], [r[backend]["busbw"] for r in sweep], marker="o", color=color,
                      label=backend)
        axes.set_xscale("log", base=2)
        axes.set_yscale("log")
        axes.set_xlabel("bytes")
        axes.set_ylabel("busbw (GB/s)")
        axes.set_title(f"torch.distributed all_reduce, float32 sum, {n} ranks")
        axes.legend()
        axes.grid(True, which="both", alpha=0.3)
        figure.tight_layout()
        figure.savefig(args.png, dpi=120)


if __name__ == "__main__":
    main()
