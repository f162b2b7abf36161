"""Every collective of the matex backend x dtype x op against a reference
each rank computes from every rank's known inputs, at edge counts."""
import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol

from torch_test_util import (FLOATING, INTEGER, REDUCIBLE, check_equal, counts, finish, reference, start, value)

rank, size = start()
OPS = {"sum": dist.ReduceOp.SUM, "avg": dist.ReduceOp.AVG, "prod": dist.ReduceOp.PRODUCT, "min": dist.ReduceOp.MIN,
       "max": dist.ReduceOp.MAX, "band": dist.ReduceOp.BAND, "bor": dist.ReduceOp.BOR, "bxor": dist.ReduceOp.BXOR}


def ops_for(dtype):
    if dtype in FLOATING:
        return ["sum", "avg", "prod", "min", "max", "premul"]
    return ["sum", "prod", "min", "max", "band", "bor", "bxor"]


def reduce_op(name, factor):
    return dist._make_nccl_premul_sum(factor) if name == "premul" else OPS[name]


def inputs_for(count, dtype, op, salt=0):
    # Averages take multiples of the rank count, so every mean is exact.
    scale = size if op == "avg" else 1
    xs = [value(r, count, dtype, op, salt) for r in range(size)]
    if scale != 1:
        xs = [(x.to(torch.float64) * scale).to(dtype) for x in xs]
    return xs


def factor_of(r):
    return 0.5 if r % 2 == 0 else 2.0  # exact in every floating dtype, different across ranks


# ---- all_reduce: every dtype x op x count, sync and async ----
for dtype in REDUCIBLE:
    for op in ops_for(dtype):
        for count in counts(size):
            xs = inputs_for(count, dtype, op)
            if op == "premul":
                xs_scaled = [(x.to(torch.float64) * factor_of(r)).to(dtype) for r, x in enumerate(xs)]
                expected = reference(xs_scaled, "sum", dtype)
            else:
                expected = reference(xs, op, dtype)
            t = xs[rank].clone()
            work = dist.all_reduce(t, op=reduce_op(op, factor_of(rank)), async_op=(count % 2 == 1))
            if work is not None:
                work.wait()
                check_equal(work.get_future().value()[0], expected, f"all_reduce future {dtype} {op} n={count}")
            check_equal(t, expected, f"all_reduce {dtype} {op} n={count}")

# A non-contiguous tensor is reduced in place all the same.
base = torch.stack([value(rank, 6, torch.float32, salt=s) for s in range(4)])  # 4 x 6
view = base.t()
dist.all_reduce(view)
expected = torch.stack([reference([value(r, 6, torch.float32, salt=s) for r in range(size)], "sum", torch.float32)
                        for s in range(4)]).t()
check_equal(view, expected, "all_reduce of a transposed view")

# complex: dist views it as real pairs.
z = torch.complex(value(rank, 5, torch.float32), value(rank, 5, torch.float32, salt=1))
dist.all_reduce(z)
expected = torch.complex(reference([value(r, 5, torch.float32) for r in range(size)], "sum", torch.float32),
                         reference([value(r, 5, torch.float32, salt=1) for r in range(size)], "sum", torch.float32))
check_equal(z, expected, "all_reduce complex64")

# coalesced: several tensors (of one dtype, as dist requires) in one call.
for d in (torch.float32, torch.int64):
    tensors = [value(rank, n, d, salt=n) for n in (3, 0, 11)]
    dist.all_reduce_coalesced(tensors, op=dist.ReduceOp.MAX)
    for t, n in zip(tensors, (3, 0, 11)):
        check_equal(t, reference([value(r, n, d, salt=n) for r in range(size)], "max", d), f"all_reduce_coalesced {d}")

# ---- broadcast: every root, any dtype (complex and float8 as bytes) ----
for root in range(size):
    for dtype in (torch.bool, torch.int16, torch.float64, torch.complex64, torch.float8_e4m3fn, torch.uint32):
        for count in (0, 1, 7, 1025):
            source = value(root, count, torch.float32 if dtype.is_complex or dtype == torch.float8_e4m3fn else dtype)
            source = source.to(dtype) if not dtype.is_complex else torch.complex(source, -source)
            t = source.clone() if rank == root else torch.zeros_like(source)
            dist.broadcast(t, src=root)
            same = t.view(torch.uint8) if dtype == torch.float8_e4m3fn else t
            want = source.view(torch.uint8) if dtype == torch.float8_e4m3fn else source
            check_equal(same, want, f"broadcast {dtype} root={root} n={count}")

# ---- all_gather (list and flat, in place), all_gather_object ----
for dtype in (torch.float32, torch.bfloat16, torch.int64, torch.bool):
    for count in counts(size):
        mine = value(rank, count, dtype)
        outs = [torch.empty_like(mine) for _ in range(size)]
        dist.all_gather(outs, mine)
        for r in range(size):
            check_equal(outs[r], value(r, count, dtype), f"all_gather {dtype} n={count} part {r}")
        flat = torch.empty(size * count, dtype=dtype)
        dist.all_gather_into_tensor(flat, mine)
        check_equal(flat, torch.cat([value(r, count, dtype) for r in range(size)]), f"all_gather_into_tensor {dtype}")
        inplace = torch.zeros(size * count, dtype=dtype)
        inplace[rank * count:(rank + 1) * count] = mine
        dist.all_gather_into_tensor(inplace, inplace[rank * count:(rank + 1) * count])
        check_equal(inplace, flat, f"all_gather_into_tensor in place {dtype} n={count}")
objects = [None] * size
dist.all_gather_object(objects, {"rank": rank, "text": "x" * rank})
assert objects == [{"rank": r, "text": "x" * r} for r in range(size)], objects

# ---- reduce_scatter (list and flat) with SUM, AVG, MAX, PREMUL_SUM ----
for dtype in (torch.float32, torch.bfloat16, torch.float16, torch.int32):
    for op in (["sum", "avg", "max", "premul"] if dtype in FLOATING else ["sum", "min", "bor"]):
        for count in (0, 1, 7, 65):
            xs = inputs_for(count * size, dtype, op)
            if op == "premul":
                full = reference([(x.to(torch.float64) * factor_of(r)).to(dtype) for r, x in enumerate(xs)], "sum",
                                 dtype)
            else:
                full = reference(xs, op, dtype)
            expected = full[rank * count:(rank + 1) * count]
            out = torch.empty(count, dtype=dtype)
            dist.reduce_scatter_tensor(out, xs[rank].clone(), op=reduce_op(op, factor_of(rank)))
            check_equal(out, expected, f"reduce_scatter_tensor {dtype} {op} n={count}")
            out_list = torch.empty(count, dtype=dtype)
            dist.reduce_scatter(out_list, list(xs[rank].clone().chunk(size)) if count else
                                [torch.empty(0, dtype=dtype) for _ in range(size)],
                                op=reduce_op(op, factor_of(rank)))
            check_equal(out_list, expected, f"reduce_scatter (list) {dtype} {op} n={count}")

# ---- all_to_all: equal and uneven splits (zeros included), list form ----
def block(src, dst, rows, dtype=torch.float32):
    return (torch.arange(rows * 3, dtype=torch.float64).reshape(rows, 3) + 1000 * src + 10 * dst).to(dtype)


for dtype in (torch.float32, torch.int8, torch.complex64):
    rows_to = [(rank + dst) % 3 for dst in range(size)]       # rows this rank sends to dst
    rows_from = [(src + rank) % 3 for src in range(size)]     # rows src sends here
    make = (lambda s, d, n: block(s, d, n, torch.float32)) if dtype.is_complex else (lambda s, d, n: block(s, d, n, dtype))
    send = torch.cat([make(rank, d, rows_to[d]) for d in range(size)])
    if dtype.is_complex:
        send = torch.complex(send, send)
    recv = torch.empty((sum(rows_from), 3), dtype=dtype)
    dist.all_to_all_single(recv, send, output_split_sizes=rows_from, input_split_sizes=rows_to)
    want = torch.cat([make(s, rank, rows_from[s]) for s in range(size)])
    if dtype.is_complex:
        want = torch.complex(want, want)
    check_equal(recv, want, f"all_to_all_single uneven {dtype}")
even_send = torch.cat([block(rank, d, 2) for d in range(size)])
even_recv = torch.empty_like(even_send)
dist.all_to_all_single(even_recv, even_send)
check_equal(even_recv, torch.cat([block(s, rank, 2) for s in range(size)]), "all_to_all_single even")
ins = [block(rank, d, rank + 1) for d in range(size)]  # rank r sends r + 1 rows to everyone
outs = [torch.empty(s + 1, 3) for s in range(size)]
dist.all_to_all(outs, ins)
for s in range(size):
    check_equal(outs[s], block(s, rank, s + 1), f"all_to_all list from {s}")

# ---- reduce, gather, scatter: every root ----
for root in range(size):
    for dtype, op in ((torch.float32, "sum"), (torch.int64, "max"), (torch.bfloat16, "premul"), (torch.bool, "sum")):
        xs = inputs_for(9, dtype, op)
        t = xs[rank].clone()
        dist.reduce(t, dst=root, op=reduce_op(op, factor_of(rank)))
        if rank == root:
            if op == "premul":
                expected = reference([(x.to(torch.float64) * factor_of(r)).to(dtype) for r, x in enumerate(xs)],
                                     "sum", dtype)
            else:
                expected = reference(xs, op, dtype)
            check_equal(t, expected, f"reduce {dtype} {op} root={root}")
    for count in (0, 1, 10):
        mine = value(rank, count, torch.int32)
        gathered = [torch.empty_like(mine) for _ in range(size)] if rank == root else None
        dist.gather(mine, gathered, dst=root)
        if rank == root:
            for r in range(size):
                check_equal(gathered[r], value(r, count, torch.int32), f"gather root={root} part {r}")
        pieces = [value(100 + r, count, torch.float64) for r in range(size)] if rank == root else None
        got = torch.empty(count, dtype=torch.float64)
        dist.scatter(got, pieces, src=root)
        check_equal(got, value(100 + rank, count, torch.float64), f"scatter root={root} n={count}")

# ---- functional collectives (the coalesced entry points DTensor uses) ----
mine = value(rank, 6, torch.float32)
gathered = funcol.all_gather_tensor(mine, 0, dist.group.WORLD)
check_equal(funcol.wait_tensor(gathered), torch.cat([value(r, 6, torch.float32) for r in range(size)]),
            "funcol all_gather_tensor")
xs = [value(r, 4 * size, torch.float32) for r in range(size)]
scattered = funcol.reduce_scatter_tensor(xs[rank], "sum", 0, dist.group.WORLD)
check_equal(funcol.wait_tensor(scattered), reference(xs, "sum", torch.float32)[rank * 4:(rank + 1) * 4],
            "funcol reduce_scatter_tensor")
pair = funcol.all_gather_into_tensor_coalesced([mine, mine.to(torch.float64)], dist.group.WORLD)
check_equal(funcol.wait_tensor(pair[1]), torch.cat([value(r, 6, torch.float32) for r in range(size)]).to(torch.float64),
            "funcol all_gather_into_tensor_coalesced")
pair = funcol.reduce_scatter_tensor_coalesced([xs[rank], xs[rank] * 2], "sum", [0, 0], dist.group.WORLD)
check_equal(funcol.wait_tensor(pair[1]), 2 * reference(xs, "sum", torch.float32)[rank * 4:(rank + 1) * 4],
            "funcol reduce_scatter_tensor_coalesced")

# ---- errors name what is wrong, on the calling rank, before anything is sent ----
try:
    dist.all_reduce(torch.ones(3, dtype=torch.int32), op=dist.ReduceOp.AVG)
    raise AssertionError("AVG on int32 did not raise")
except RuntimeError as error:
    assert "AVG needs a floating dtype" in str(error), error
try:
    dist.all_gather_into_tensor(torch.empty(size * 3 + 1), torch.ones(3))
    raise AssertionError("a wrong output size did not raise")
except (RuntimeError, ValueError) as error:
    assert "all_gather_into_tensor" in str(error) or "size" in str(error), error

finish("collectives")
