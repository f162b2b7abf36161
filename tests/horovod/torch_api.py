"""Every call of horovod.torch (served by matex) on exact inputs, against
references each rank computes itself for every rank: edge counts (0, 1, a
prime, counts that do not divide by the rank count), ragged allgathers,
splits, scaling, the optimizer and its options, SyncBatchNorm, and
mismatches between ranks, which must be errors naming what differed, never
hangs. Run under mpirun with MATEX_HOROVOD=1 (tests/horovod/CMakeLists.txt)."""
import os
import warnings

import numpy as np
import torch

import horovod.torch as hvd
from hvd_test_util import (COUNTS, check_a_rank_leaving, check_equal, expect_error, rank_input, reducescatter_rows,
                           rows_input)

assert "matex_horovod" in hvd.__file__, f"imported {hvd.__file__}, not matex's horovod"
expect_error(hvd.rank, "hvd.init()", kinds=(ValueError,))
hvd.init()
hvd.init()  # idempotent
rank, size = hvd.rank(), hvd.size()
everyone = range(size)
t = lambda a, dtype=torch.float32: torch.tensor(np.asarray(a), dtype=dtype)  # noqa: E731

# ---- the job's shape -----------------------------------------------------------------------------------
shape = hvd.allgather_object((hvd.local_rank(), hvd.local_size(), hvd.cross_rank(), hvd.cross_size()))
assert hvd.is_initialized() and hvd.mpi_built() and hvd.mpi_enabled() and hvd.mpi_threads_supported()
assert not hvd.gloo_built() and not hvd.gloo_enabled() and not hvd.rocm_built()
assert isinstance(hvd.nccl_built(), int) and isinstance(hvd.cuda_built(), bool)
# The reference layout: MATEX_VIRTUAL_NODES lists the nodes' rank counts in rank order; else one node.
layout = [int(n) for n in (os.environ.get("MATEX_VIRTUAL_NODES") or str(size)).split(",")]
expected_shape = []
for node, count in enumerate(layout):
    for local_rank in range(count):
        holders = [n for n, c in enumerate(layout) if c > local_rank]  # nodes with a rank of this local rank
        expected_shape.append((local_rank, count, holders.index(node), len(holders)))
assert shape == expected_shape, (shape, expected_shape)
assert hvd.is_homogeneous() == (len(set(layout)) == 1)

# ---- allreduce ----------------------------------------------------------------------------------------
for count in COUNTS:
    inputs = [rank_input(r, count) for r in everyone]
    for dtype in (torch.float32, torch.float64, torch.float16, torch.bfloat16):
        check_equal(hvd.allreduce(t(inputs[rank], dtype)), np.mean(inputs, 0) if count else np.zeros(0),
                    f"allreduce average {dtype} count {count}", rtol=1e-2 if dtype in (torch.float16,
                                                                                     torch.bfloat16) else 1e-6)
        check_equal(hvd.allreduce(t(inputs[rank], dtype), op=hvd.Sum), np.sum(inputs, 0),
                    f"allreduce sum {dtype} count {count}")
    for dtype in (torch.int32, torch.int64, torch.uint8, torch.int8):
        check_equal(hvd.allreduce(t(inputs[rank], dtype), op=hvd.Sum), np.sum(inputs, 0), f"sum {dtype} {count}")
    # Integers as Horovod scales them: in double, truncated toward zero, op Average being a postscale of
    # 1/size; a prescale applies to each rank's input before the sum. Negative values too.
    signed = [rank_input(r, count) - 6 for r in everyone]  # -5..5
    for dtype in (torch.int32, torch.int64, torch.int8):
        check_equal(hvd.allreduce(t(signed[rank], dtype)), np.trunc(np.sum(signed, 0) * (1.0 / size)),
                    f"integer average {dtype} count {count}")
        check_equal(hvd.allreduce(t(signed[rank], dtype), op=hvd.Sum, prescale_factor=0.5, postscale_factor=3.0),
                    np.trunc(3.0 * np.sum(np.trunc(0.5 * np.array(signed)), 0)), f"integer scales {dtype} {count}")
    check_equal(hvd.allreduce(t(inputs[rank], torch.uint8), op=hvd.Average, postscale_factor=0.7),
                np.trunc(np.sum(inputs, 0) * (0.7 / size)), f"uint8 average and postscale {count}")
    check_equal(hvd.allreduce(t(inputs[rank]), op=hvd.Min), np.min(inputs, 0) if count else [], f"min {count}")
    check_equal(hvd.allreduce(t(inputs[rank]), op=hvd.Max), np.max(inputs, 0) if count else [], f"max {count}")
    check_equal(hvd.allreduce(t(inputs[rank], torch.float64), op=hvd.Product), np.prod(inputs, 0),
                f"product {count}")
    check_equal(hvd.allreduce(t(inputs[rank]), average=False), np.sum(inputs, 0), f"average=False {count}")
    check_equal(hvd.allreduce(t(inputs[rank], torch.float64), prescale_factor=0.5, postscale_factor=3.0),
                np.mean(inputs, 0) * 1.5 if count else [], f"scaled average {count}", rtol=1e-12)
    # In place, async, grouped (with a tensor of another dtype in the group)
    x = t(inputs[rank])
    assert hvd.allreduce_(x, op=hvd.Sum) is x
    check_equal(x, np.sum(inputs, 0), f"allreduce_ {count}")
    y = t(inputs[rank])
    handle = hvd.allreduce_async_(y, op=hvd.Sum, name=f"async.{count}")
    while not hvd.poll(handle):
        pass
    check_equal(hvd.synchronize(handle), np.sum(inputs, 0), f"allreduce_async_ {count}")
    check_equal(y, np.sum(inputs, 0), f"allreduce_async_ in place {count}")
    group = [t(inputs[rank]), t(inputs[rank] * 2, torch.float64), t(inputs[rank], torch.int64)]
    out = hvd.grouped_allreduce(group, op=hvd.Sum)
    for got, factor in zip(out, (1, 2, 1)):
        check_equal(got, np.sum(inputs, 0) * factor, f"grouped_allreduce {count}")
    check_equal(group[0], inputs[rank], f"grouped_allreduce left its input alone {count}")
    hvd.grouped_allreduce_(group, op=hvd.Sum)
    check_equal(group[1], np.sum(inputs, 0) * 2, f"grouped_allreduce_ {count}")
# fp16 compression: the wire carries float16, the result comes back in float32
out = hvd.allreduce(t(rank_input(rank, 7)), compression=hvd.Compression.fp16, op=hvd.Sum)
assert out.dtype == torch.float32
check_equal(out, np.sum([rank_input(r, 7) for r in everyone], 0), "fp16 compression")
# Non-contiguous input, and the gradient of allreduce (the same reduction of the incoming gradients)
wide = t(rows_input(rank, 4, 6))[:, ::2]
check_equal(hvd.allreduce(wide, op=hvd.Sum), np.sum([rows_input(r, 4, 6)[:, ::2] for r in everyone], 0),
            "non-contiguous")
leaf = t(rank_input(rank, 5)).requires_grad_()
(hvd.allreduce(leaf, op=hvd.Sum) * t(rank_input(rank, 5, salt=1))).sum().backward()
check_equal(leaf.grad, np.sum([rank_input(r, 5, salt=1) for r in everyone], 0), "allreduce gradient")

# ---- the gradients of the other collectives, as Horovod 0.28 defines them --------------------------------------------
upstream = [t(rows_input(r, 2 * size, 3, salt=5)) for r in everyone]  # rank r's gradient of its output
x = t(rows_input(rank, 2, 3)).requires_grad_()
(hvd.allgather(x) * upstream[rank][: 2 * size]).sum().backward()  # allgather: rows of the ranks' mean gradient
check_equal(x.grad, np.mean([u.numpy() for u in upstream], 0)[2 * rank:2 * rank + 2], "allgather gradient",
            rtol=1e-6)
for root in {0, size - 1}:
    x = t(rows_input(rank, 2, 3)).requires_grad_()
    (hvd.broadcast(x, root) * upstream[rank][:2]).sum().backward()  # broadcast: the mean, on the root only
    check_equal(x.grad, np.mean([u.numpy()[:2] for u in upstream], 0) * (rank == root),
                f"broadcast gradient root {root}", rtol=1e-6)
for op, factor in ((hvd.Sum, size), (hvd.Average, 1)):  # reduce-scatter: every rank's gradient gathered (x N for Sum)
    x = t(rows_input(rank, 2 * size, 3)).requires_grad_()
    (hvd.reducescatter(x, op=op) * upstream[rank][:2]).sum().backward()
    check_equal(x.grad, np.concatenate([u.numpy()[:2] for u in upstream]) * factor, f"reducescatter gradient {op}",
                rtol=1e-6)
# grouped_allreduce: each gradient reduced as its tensor was (a sum, then an average)
for op, combine in ((hvd.Sum, np.sum), (hvd.Average, np.mean)):
    xs = [t(rows_input(rank, 2, 3)).requires_grad_(), t(rank_input(rank, 4)).requires_grad_()]
    ups = [[t(rows_input(r, 2, 3, salt=7)) for r in everyone], [t(rank_input(r, 4, salt=8)) for r in everyone]]
    outs = hvd.grouped_allreduce(xs, op=op)
    ((outs[0] * ups[0][rank]).sum() + (outs[1] * ups[1][rank]).sum()).backward()
    for x, up in zip(xs, ups):
        check_equal(x.grad, combine([u.numpy() for u in up], 0), f"grouped_allreduce gradient {op}", rtol=1e-6)
# grouped_allgather: each tensor's rows of its gradient averaged across ranks, as allgather's
widths, row_counts = (3, 2), [[1 + r % 2 for r in everyone], [2] * size]
xs = [t(rows_input(rank, row_counts[i][rank], widths[i])).requires_grad_() for i in range(2)]
outs = hvd.grouped_allgather(xs)
ups = [[t(rows_input(r, sum(row_counts[i]), widths[i], salt=9 + i)) for r in everyone] for i in range(2)]
((outs[0] * ups[0][rank]).sum() + (outs[1] * ups[1][rank]).sum()).backward()
for i, x in enumerate(xs):
    start = sum(row_counts[i][:rank])
    check_equal(x.grad, np.mean([u.numpy() for u in ups[i]], 0)[start:start + row_counts[i][rank]],
                f"grouped_allgather gradient {i}", rtol=1e-6)
x = t(rows_input(rank, 2 * size, 3)).requires_grad_()  # all-to-all: the gradient rows go back where they came from
(hvd.alltoall(x) * upstream[rank]).sum().backward()
check_equal(x.grad, np.concatenate([upstream[j].numpy()[2 * rank:2 * rank + 2] for j in everyone]),
            "alltoall gradient")

# ---- allgather (ragged), broadcast ----------------------------------------------------------------------
for width in (1, 3):
    rows = [(r * 2 + 1) % 4 for r in everyone]  # 1, 3, 1, 3: ragged, and one rank may send 0 below
    for rows_of in (rows, [0 if r == size - 1 else n for r, n in enumerate(rows)]):
        mine = t(rows_input(rank, rows_of[rank], width))
        expected = np.concatenate([rows_input(r, rows_of[r], width) for r in everyone])
        check_equal(hvd.allgather(mine), expected, f"allgather width {width} rows {rows_of}")
        check_equal(hvd.synchronize(hvd.allgather_async(mine.to(torch.int64))), expected, "allgather_async")
grouped = hvd.grouped_allgather([t([rank]), t(rows_input(rank, 2, 2))])
check_equal(grouped[0], list(everyone), "grouped_allgather 0")
check_equal(grouped[1], np.concatenate([rows_input(r, 2, 2) for r in everyone]), "grouped_allgather 1")
for root in {0, size - 1}:
    for count in COUNTS:
        check_equal(hvd.broadcast(t(rank_input(rank, count)), root), rank_input(root, count),
                    f"broadcast root {root} count {count}")
    z = t(rank_input(rank, 7), torch.int64)
    assert hvd.broadcast_(z, root) is z
    check_equal(z, rank_input(root, 7), f"broadcast_ root {root}")
    check_equal(hvd.synchronize(hvd.broadcast_async(t(rank_input(rank, 3)), root)), rank_input(root, 3),
                "broadcast_async")

# ---- alltoall, reducescatter ------------------------------------------------------------------------------
even = t(np.concatenate([rows_input(rank, 2, 3, salt=10 * j) for j in everyone]))
check_equal(hvd.alltoall(even), np.concatenate([rows_input(r, 2, 3, salt=10 * rank) for r in everyone]),
            "alltoall even split")
splits = [(rank + j) % 3 for j in everyone]  # rank r sends (r + j) % 3 rows to rank j (some 0)
mine = t(np.concatenate([rows_input(rank, splits[j], 2, salt=10 * j) for j in everyone]))
received, received_splits = hvd.alltoall(mine, splits=splits)
check_equal(received, np.concatenate([rows_input(r, (r + rank) % 3, 2, salt=10 * rank) for r in everyone]),
            "alltoall with splits")
check_equal(received_splits, [(r + rank) % 3 for r in everyone], "alltoall received splits")
assert received_splits.dtype == torch.int32, received_splits.dtype
expect_error(lambda: hvd.alltoall(t(np.zeros((size + 1, 2)))), "multiple of the number of ranks")
expect_error(lambda: hvd.alltoall(mine, splits=[1] * (size + 1)), "splits")
for rows in (size * 3, size * 3 + 1, 1, 0, 7):  # a multiple, not a multiple, fewer rows than ranks, none, prime
    inputs = [rows_input(r, rows, 2) for r in everyone]
    shares = reducescatter_rows(rows, size)
    start = sum(shares[:rank])
    check_equal(hvd.reducescatter(t(inputs[rank]), op=hvd.Sum), np.sum(inputs, 0)[start:start + shares[rank]],
                f"reducescatter sum rows {rows}")
    check_equal(hvd.reducescatter(t(inputs[rank], torch.float64)), np.mean(inputs, 0)[start:start + shares[rank]]
                if rows else np.zeros((0, 2)), f"reducescatter average rows {rows}", rtol=1e-12)
out = hvd.grouped_reducescatter([t(rows_input(rank, size, 1)), t(rows_input(rank, size * 2, 1))], op=hvd.Sum)
check_equal(out[1], np.sum([rows_input(r, size * 2, 1) for r in everyone], 0)[2 * rank:2 * rank + 2],
            "grouped_reducescatter")

# ---- objects, barrier, join -------------------------------------------------------------------------------
for root in {0, size - 1}:
    obj = hvd.broadcast_object({"rank": rank, "values": list(range(rank + 3)), "empty": b""}, root_rank=root)
    assert obj == {"rank": root, "values": list(range(root + 3)), "empty": b""}, obj
assert hvd.broadcast_object(None) is None
assert hvd.allgather_object(("rank", rank, "x" * rank)) == [("rank", r, "x" * r) for r in everyone]
hvd.barrier()
import time  # noqa: E402
time.sleep(2.0 if rank == size - 1 else 0)  # the highest rank arrives last, by far more than ranks wake apart
last = hvd.join()  # every rank learns the same last rank to arrive
assert last == size - 1, last

# Join as Horovod defines it: until every rank has joined, a joined rank adds zeros to the others'
# allreduces (an average still divides by the job's size), and broadcasts and allgathers raise.
for first in everyone:
    values = [rank_input(r, 7) - 6 for r in everyone]  # -5..5, so integer averages truncate both ways
    others = np.sum([values[r] for r in everyone if r != first], 0)
    if rank == first:
        last = hvd.join()
    else:
        # Named, as a joined rank does not count the others' unnamed calls (Horovod's names them by a counter)
        check_equal(hvd.allreduce(t(values[rank]), name="join.average"), others / size,
                    f"join: average without rank {first}", rtol=1e-6)
        check_equal(hvd.allreduce(t(values[rank], torch.int32), op=hvd.Sum, name="join.int32"), others,
                    f"join: int32 sum, {first}")
        handles = [hvd.allreduce_async(t(values[rank], torch.int64), name="join.int64"),
                   hvd.allreduce_async(t(values[rank][:1], torch.float64), name="join.one", op=hvd.Sum)]
        check_equal(hvd.synchronize(handles[0]), np.trunc(others / size), f"join: int64 average, {first}")
        check_equal(hvd.synchronize(handles[1]), others[:1], f"join: one element, {first}")
        if size > 1:
            expect_error(lambda: hvd.broadcast(t([1.0]), root_rank=(first + 1) % size, name="join.bcast"),
                         f"rank(s) {first} have joined", kinds=(RuntimeError,))
            # unnamed: the joined rank does not count it, and the counts meet again at the join
            expect_error(lambda: hvd.allgather(t([[1.0, 2.0]])), f"rank(s) {first} have joined", kinds=(RuntimeError,))
        last = hvd.join()
    check_equal(hvd.allreduce(t(values[rank]), op=hvd.Sum), np.sum(values, 0), f"an unnamed call after join {first}")
    lasts = hvd.allgather_object(last)
    assert len(set(lasts)) == 1 and (size == 1 or lasts[0] != first), (first, lasts)

# Uneven data, as Horovod's users train with join: rank r has r + 2 batches, and the optimizer's averages
# over the steps where some ranks have run out count their zeros. The reference replays every rank's
# gradients here (a linear least-squares model in float64, plain SGD).
features = [np.random.RandomState(100 + r).randint(-3, 4, size=(r + 2, 4, 3)).astype(np.float64) for r in everyone]
targets = [np.random.RandomState(200 + r).randint(-3, 4, size=(r + 2, 4)).astype(np.float64) for r in everyone]
weights = np.array([0.5, -0.25, 0.125])
model = torch.nn.Linear(3, 1, bias=False).double()
with torch.no_grad():
    model.weight.copy_(torch.tensor(weights[None, :]))
optimizer = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.01),
                                     named_parameters=model.named_parameters())
for step in range(rank + 2):
    optimizer.zero_grad()
    loss = ((model(torch.tensor(features[rank][step])).squeeze(1) - torch.tensor(targets[rank][step])) ** 2).mean()
    loss.backward()
    optimizer.step()
hvd.join()
for step in range(rank + 2):  # the steps this rank applied (a joined rank's model stays where it was)
    active = [r for r in everyone if step < r + 2]
    gradient = sum(2 * features[r][step].T @ (features[r][step] @ weights - targets[r][step]) / 4 for r in active)
    weights = weights - 0.01 * gradient / size
check_equal(model.weight.detach()[0], weights, "uneven batches with join", rtol=1e-12)

# ---- the optimizer, broadcasts of models and optimizer state ------------------------------------------------
torch.manual_seed(rank)  # different models on every rank until broadcast_parameters
model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU(), torch.nn.Linear(3, 2))
hvd.broadcast_parameters(model.state_dict(), root_rank=0)
root_params = hvd.broadcast_object([p.detach().numpy() for p in model.parameters()], 0)
for p, q in zip(model.parameters(), root_params):
    check_equal(p.detach(), q, "broadcast_parameters")
data = [(t(rows_input(r, 4, 4) / 100.0), t(rows_input(r, 4, 2) / 50.0)) for r in everyone]


def local_gradients(net, r):
    net.zero_grad()
    x, y = data[r]
    torch.nn.functional.mse_loss(net(x), y).backward()
    return [p.grad.detach().clone().numpy().astype(np.float64) for p in net.parameters()]


reference = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU(), torch.nn.Linear(3, 2))
reference.load_state_dict(model.state_dict())
expected = [np.mean(g, 0) for g in zip(*[local_gradients(reference, r) for r in everyone])]
for options in ({}, {"gradient_predivide_factor": 2.0}, {"compression": hvd.Compression.fp16},
                {"op": hvd.Sum}):
    optimizer = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.0),
                                         named_parameters=model.named_parameters(), **options)
    assert isinstance(optimizer, torch.optim.SGD)
    optimizer.zero_grad()
    x, y = data[rank]
    torch.nn.functional.mse_loss(model(x), y).backward()
    expect_error(optimizer.zero_grad, "race", kinds=(AssertionError,))
    optimizer.step()
    factor = size if options.get("op") == hvd.Sum else 1
    tolerance = 2e-3 if "compression" in options else 1e-6
    for p, g in zip(model.parameters(), expected):
        check_equal(p.grad, g * factor, f"DistributedOptimizer {options}", rtol=tolerance)
# backward_passes_per_step: two local passes accumulate, then one average (Horovod: of the sums)
optimizer = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.0),
                                     named_parameters=model.named_parameters(), backward_passes_per_step=2)
optimizer.zero_grad()
for _ in range(2):
    torch.nn.functional.mse_loss(model(data[rank][0]), data[rank][1]).backward()
optimizer.step()
for p, g in zip(model.parameters(), expected):
    check_equal(p.grad, 2 * g, "backward_passes_per_step=2", rtol=1e-6)
# synchronize() then step() under skip_synchronize(): clipping between them sees averaged gradients
optimizer = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.5),
                                     named_parameters=model.named_parameters())
before = [p.detach().clone() for p in model.parameters()]
optimizer.zero_grad()
torch.nn.functional.mse_loss(model(data[rank][0]), data[rank][1]).backward()
optimizer.synchronize()
with optimizer.skip_synchronize():
    optimizer.step()
for p, b, g in zip(model.parameters(), before, expected):
    check_equal(p.detach(), b.numpy() - 0.5 * g, "skip_synchronize step", rtol=1e-6)
# step() after synchronize() without skip_synchronize() says so (in the words Horovod's tests look for)
optimizer.zero_grad()
torch.nn.functional.mse_loss(model(data[rank][0]), data[rank][1]).backward()
optimizer.synchronize()
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    optimizer.step()
assert any("optimizer.step() called without optimizer.skip_synchronize()" in str(w.message) for w in caught), \
    [str(w.message) for w in caught]
# Named-parameter mistakes are refused
expect_error(lambda: hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                              named_parameters=[("w", p) for p in model.parameters()]),
             "unique", kinds=(ValueError,))
expect_error(lambda: hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                              named_parameters=list(model.named_parameters())[:1]),
             "leaves out", kinds=(ValueError,))
expect_error(lambda: hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1), op=hvd.Adasum),
             "Adasum")
# A sparse gradient (nn.Embedding(sparse=True)): gathered (every rank's rows, values averaged), or with
# sparse_as_dense averaged densely; sparse again either way when step() applies it, as in Horovod
table = torch.nn.Embedding(5, 2, sparse=True)
with torch.no_grad():
    table.weight.copy_(t(rows_input(0, 5, 2)))
rows_used = torch.tensor([rank % 5, (rank + 2) % 5])
for sparse_as_dense in (False, True):
    optimizer = hvd.DistributedOptimizer(torch.optim.SGD(table.parameters(), lr=0.0), sparse_as_dense=sparse_as_dense,
                                         named_parameters=table.named_parameters())
    optimizer.zero_grad()
    table.weight.grad = None
    table(rows_used).sum().backward()
    optimizer.step()
    dense = np.zeros((5, 2))
    for r in everyone:
        for row in (r % 5, (r + 2) % 5):
            dense[row] += 1.0 / size
    assert table.weight.grad.is_sparse, sparse_as_dense
    check_equal(table.weight.grad.to_dense(), dense, f"sparse gradient, sparse_as_dense={sparse_as_dense}", rtol=1e-6)

# Without named_parameters every parameter still gets a name of its own, the same on every rank
# (_parameter_names, which Horovod's tests read), across parameter groups.
pair = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.Linear(2, 2))
unnamed = hvd.DistributedOptimizer(torch.optim.SGD([{"params": pair[0].parameters()},
                                                    {"params": pair[1].parameters()}], lr=0.1))
names = unnamed._parameter_names
assert len(names) == 4 and len(set(names.values())) == 4, names
assert hvd.allgather_object(sorted(names.values())) == [sorted(names.values())] * size
# A fresh optimizer's state is made with zero gradients, which stay (as in Horovod); a parameter that
# needs no gradient keeps none, and the parameters keep their values.
frozen = torch.nn.Linear(3, 1)
frozen.bias.requires_grad_(False)
fresh = torch.optim.SGD(frozen.parameters(), lr=0.1, momentum=0.9, weight_decay=0.01)
values = [p.detach().clone() for p in frozen.parameters()]
hvd.broadcast_optimizer_state(fresh, root_rank=0)
check_equal(frozen.weight.grad, np.zeros((1, 3)), "a fresh state's zero gradient")
assert frozen.bias.grad is None, frozen.bias.grad
for p, v in zip(frozen.parameters(), values):
    check_equal(p.detach(), v, "a fresh state leaves the parameters alone")
# broadcast_optimizer_state: root's moments and hyperparameters everywhere; a fresh state is made first.
# A new model: the DistributedOptimizers above still hook the old one's parameters.
model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU(), torch.nn.Linear(3, 2))
adam = torch.optim.Adam(model.parameters(), lr=0.001 * (rank + 1))
if rank == 0:
    for _ in range(2):
        adam.zero_grad()
        torch.nn.functional.mse_loss(model(data[0][0]), data[0][1]).backward()
        adam.step()
hvd.broadcast_parameters(model.state_dict(), root_rank=0)
weights = [p.detach().clone() for p in model.parameters()]
hvd.broadcast_optimizer_state(adam, root_rank=0)
for p, w in zip(model.parameters(), weights):
    check_equal(p.detach(), w, "broadcast_optimizer_state leaves the parameters alone")
state = adam.state_dict()
root_state = hvd.broadcast_object({k: {n: (v.numpy() if torch.is_tensor(v) else v) for n, v in s.items()}
                                   for k, s in state["state"].items()}, 0)
assert state["param_groups"][0]["lr"] == 0.001, state["param_groups"][0]["lr"]
for k, slots in state["state"].items():
    for n, v in slots.items():
        check_equal(v.numpy() if torch.is_tensor(v) else v, root_state[k][n], f"optimizer state {k}.{n}")

# ---- SyncBatchNorm: N ranks of batch B normalize as one process of batch N*B ---------------------------------
bn = hvd.SyncBatchNorm(3).double()
plain = torch.nn.BatchNorm1d(3).double()
batches = [t(rows_input(r, 5, 3) / 10.0 + r, torch.float64) for r in everyone]
x = batches[rank].clone().requires_grad_()
out = bn(x)
whole = torch.cat(batches).clone().requires_grad_()
plain_out = plain(whole)
check_equal(out.detach(), plain_out.detach()[5 * rank:5 * rank + 5], "SyncBatchNorm output", rtol=1e-10)
weights = t(rows_input(rank, 5, 3), torch.float64)
(out * weights).sum().backward()
(plain_out * torch.cat([t(rows_input(r, 5, 3), torch.float64) for r in everyone])).sum().backward()
check_equal(x.grad, whole.grad[5 * rank:5 * rank + 5], "SyncBatchNorm input gradient", rtol=1e-10)
check_equal(hvd.allreduce(bn.weight.grad, op=hvd.Sum), plain.weight.grad, "SyncBatchNorm weight gradient",
            rtol=1e-10)
check_equal(bn.running_mean, plain.running_mean, "SyncBatchNorm running mean", rtol=1e-10)
check_equal(bn.running_var, plain.running_var, "SyncBatchNorm running var", rtol=1e-10)
bn.eval()
plain.eval()
check_equal(bn(batches[rank]).detach(), plain(batches[rank]).detach(), "SyncBatchNorm eval", rtol=1e-10)

# In float16, with data far from zero (1000 + small values): statistics in float32, two passes
bn16 = hvd.SyncBatchNorm(3).half()
big = [t(rows_input(r, 5, 3) + 1000.0 + r, torch.float16) for r in everyone]  # exact in float16
reference16 = torch.nn.functional.batch_norm(torch.cat(big).double(), None, None, training=True)
check_equal(bn16(big[rank]), reference16[5 * rank:5 * rank + 5], "SyncBatchNorm float16, mean 1000", rtol=2e-3)

# ---- horovod.common.util, which Horovod's own tests and some scripts import -----------------------------------
from horovod.common import util as hvd_util  # noqa: E402
assert hvd_util.is_version_greater_equal_than("2.16.1", "2.16.0") and not hvd_util.is_version_greater_equal_than(
    "2.9.0", "2.10.0") and hvd_util.is_version_greater_equal_than("2.1.0+cu121", "2.1.0")
assert hvd_util.split_list(list(range(7)), 3) == [[0, 1, 2], [3, 4], [5, 6]] and hvd_util.is_iterable((1,))
with hvd_util.env(MATEX_UTIL_PROBE="1"):
    assert os.environ["MATEX_UTIL_PROBE"] == "1"
assert "MATEX_UTIL_PROBE" not in os.environ and hvd_util.mpi_built() and not hvd_util.gloo_built()

# ---- refusals and bad arguments -----------------------------------------------------------------------------
expect_error(lambda: hvd.allreduce(t([1.0]), op=hvd.Adasum), "Adasum", "not supported")
expect_error(lambda: hvd.allreduce(t([1.0]), op=hvd.Sum, average=True), "not both", kinds=(ValueError,))
expect_error(lambda: hvd.allreduce(t([1], torch.int16)), "int16", kinds=(TypeError,))  # Horovod scales no int16
expect_error(lambda: hvd.broadcast(t([1.0]), root_rank=size), f"root_rank={size}", kinds=(ValueError,))
check_equal(hvd.broadcast(t(rank_input(rank, 3)), np.int64(size - 1)), rank_input(size - 1, 3), "NumPy root_rank")
expect_error(lambda: hvd.elastic.run, "horovod.torch.elastic.run", "not supported")
expect_error(lambda: hvd.allgather(torch.tensor(1.0)), "scalar", kinds=(ValueError,))
expect_error(lambda: hvd.allreduce(t([1.0]), process_set=hvd.ProcessSet([0])), "is not registered",
             kinds=(ValueError,))
expect_error(lambda: hvd.start_timeline("x.json"), "HOROVOD_TIMELINE")
expect_error(lambda: hvd.synchronize(123456), "unknown handle", kinds=(ValueError,))

# ---- mismatches between ranks: errors naming them, on every rank, not hangs ----------------------------------
if size > 1:
    expect_error(lambda: hvd.allreduce(t(rank_input(rank, 3 + rank)), name="mismatch.count"),
                 "mismatch.count", "count=3", "count=4")
    expect_error(lambda: hvd.allreduce(t([1.0], torch.float32 if rank else torch.float64), name="mismatch.dtype"),
                 "mismatch.dtype", "float32", "float64")
    expect_error(lambda: hvd.broadcast(t([1.0]), root_rank=rank, name="mismatch.root"), "mismatch.root", "root=")
    expect_error(lambda: hvd.allgather(t(rows_input(rank, 2, 2 + rank)), name="mismatch.width"), "mismatch.width")
    # One count in different shapes (Horovod compares shapes, not counts)
    expect_error(lambda: hvd.allreduce(t(np.ones((17, 1311)) if rank == 0 else np.ones((17, 23, 57))),
                                       name="mismatch.shape"), "mismatch.shape", "shape=[17, 1311]",
                 "shape=[17, 23, 57]")
    expect_error(lambda: hvd.broadcast(t(np.ones((2, 3)) if rank == 0 else np.ones((3, 2))), 0,
                                       name="mismatch.bshape"), "mismatch.bshape", "shape=[2, 3]", "shape=[3, 2]")
    expect_error(lambda: hvd.allgather(t(np.ones((2, 2, 3)) if rank == 0 else np.ones((1, 3, 2))),
                                       name="mismatch.gshape"), "mismatch.gshape", "shape=[2, 2, 3]")
    expect_error(lambda: hvd.reducescatter(t(np.ones((2 * size, 6)) if rank == 0 else np.ones((2 * size, 2, 3))),
                                           name="mismatch.rshape"), "mismatch.rshape", "shape=")
    expect_error(lambda: hvd.allreduce(t([1.0, 2.0], torch.int32 if rank % 2 == 0 else torch.float32), op=hvd.Sum,
                                       name="mismatch.type"), "mismatch.type", "int32", "float32")
    # An error one rank finds before submitting reaches the others as an error naming it, not a wait; unnamed
    # calls stay in step after it.
    if rank == 0:
        expect_error(lambda: hvd.allreduce(t([1, 2], torch.int16)), "int16", kinds=(TypeError,))
        expect_error(lambda: hvd.allgather(torch.tensor(1.0), name="refused.scalar"), "scalar", kinds=(ValueError,))
        expect_error(lambda: hvd.broadcast_(t([1.0]), root_rank=size, name="refused.root"), f"root_rank={size}",
                     kinds=(ValueError,))
    else:
        expect_error(lambda: hvd.allreduce(t([1.0, 2.0])), "rank 0: TypeError", "int16", kinds=(RuntimeError,))
        expect_error(lambda: hvd.allgather(t([1.0]), name="refused.scalar"), "refused.scalar", "rank 0: ValueError",
                     "scalar", kinds=(RuntimeError,))
        expect_error(lambda: hvd.broadcast_(t([1.0]), root_rank=0, name="refused.root"), "refused.root",
                     "rank 0: ValueError", kinds=(RuntimeError,))
    check_equal(hvd.allreduce(t([1.0, 2.0]), op=hvd.Sum), [size, 2.0 * size], "an unnamed allreduce after refusals")
    # Two operations under one name at once: the second raises ValueError, as in Horovod, on every rank,
    # for as long as the first has not been synchronized (complete or not). Rank 0 submits first while
    # the others wait at a barrier: reducescatter_async, too, returns while its reduction is in flight
    # (rank 0 would wait here forever for the others if it did not).
    rows = rows_input(rank, 2 * size, 1)

    def submit_twice():
        first = hvd.allreduce_async(t([1.0]), op=hvd.Sum, name="duplicate")
        expect_error(lambda: hvd.allreduce_async(t([1.0]), op=hvd.Sum, name="duplicate"), "'allreduce.duplicate'",
                     "not yet synchronized", kinds=(ValueError,))
        scattered = hvd.reducescatter_async(t(rows), op=hvd.Sum, name="duplicate")
        expect_error(lambda: hvd.reducescatter_async(t(rows), op=hvd.Sum, name="duplicate"), "duplicate",
                     "not yet synchronized", kinds=(ValueError,))
        return first, scattered
    if rank == 0:
        first, scattered = submit_twice()
    hvd.barrier()
    if rank != 0:
        first, scattered = submit_twice()
    check_equal(hvd.synchronize(first), [size], "the first of two allreduces under one name")
    everyones_rows = np.sum([rows_input(r, 2 * size, 1) for r in everyone], 0)
    check_equal(hvd.synchronize(scattered), everyones_rows[2 * rank:2 * rank + 2],
                "the first of two reduce-scatters under one name")
    check_equal(hvd.allreduce(t([2.0]), op=hvd.Sum, name="duplicate"), [2.0 * size],
                "a name used again after synchronize")
# Last: one rank leaves while the others still submit (it shuts Horovod down on every rank).
check_a_rank_leaving(hvd, lambda a: torch.tensor(a, dtype=torch.float32))
print(f"rank {rank}: horovod.torch API checks passed on {size} ranks", flush=True)
