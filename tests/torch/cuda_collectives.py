"""CUDA tensors on the matex backend (libmatexcomm's device path): allreduce
(sum, avg, max, premultiplied sum), broadcast, all_gather_into_tensor and
reduce_scatter_tensor on every rank's GPU, against references computed on
the host from every rank's known inputs; a call issued on a side stream
(the collective must follow that stream's order); an asynchronous call and
its future; a CPU tensor next to a CUDA one (a clear error). Skips (exit 77)
where torch sees no GPU or libmatexcomm has no CUDA."""
import os
import sys

import torch

if not torch.cuda.is_available():
    print("SKIP: torch sees no CUDA device", flush=True)
    sys.exit(77)

import torch.distributed as dist  # noqa: E402

import matex_torch  # noqa: E402,F401
from torch_test_util import check_equal, finish, reference, start, value  # noqa: E402

if not matex_torch._native.extension().built_with_cuda():
    print("SKIP: libmatexcomm was built without CUDA", flush=True)
    sys.exit(77)

rank, size = start()
local = int(os.environ.get("OMPI_COMM_WORLD_LOCAL_RANK", rank))
device = torch.device("cuda", local % torch.cuda.device_count())
torch.cuda.set_device(device)
assert dist.group.WORLD._get_backend(device).name() == "matex"

for dtype in (torch.float32, torch.float16, torch.bfloat16, torch.int32, torch.int64):
    for count in (0, 1, 13 * size + 1, 4099, 1 << 20):
        for op, name in ((dist.ReduceOp.SUM, "sum"), (dist.ReduceOp.MAX, "max")):
            t = value(rank, count, dtype).to(device)
            dist.all_reduce(t, op=op)
            want = reference([value(r, count, dtype) for r in range(size)], name, dtype)
            check_equal(t.cpu(), want, f"all_reduce {name} {dtype} x{count} on {device}")
    if dtype.is_floating_point:
        t = (value(rank, 1000, dtype) * size).to(device)
        dist.all_reduce(t, op=dist.ReduceOp.AVG)
        want = reference([value(r, 1000, dtype) * size for r in range(size)], "avg", dtype)
        check_equal(t.cpu(), want, f"all_reduce avg {dtype}")
        t = value(rank, 1000, dtype).to(device)
        dist.all_reduce(t, op=dist._make_nccl_premul_sum(2.0))
        check_equal(t.cpu(), (reference([value(r, 1000, dtype) for r in range(size)], "sum", dtype) * 2).to(dtype),
                    f"all_reduce premul_sum(2) {dtype}")

    src = size - 1
    b = (value(src, 777, dtype) if rank == src else torch.zeros(777, dtype=dtype)).to(device)
    dist.broadcast(b, src=src)
    check_equal(b.cpu(), value(src, 777, dtype), f"broadcast {dtype}")

    out = torch.empty(size * 301, dtype=dtype, device=device)
    dist.all_gather_into_tensor(out, value(rank, 301, dtype).to(device))
    check_equal(out.cpu(), torch.cat([value(r, 301, dtype) for r in range(size)]), f"all_gather_into_tensor {dtype}")

    block = 257
    full = value(rank, block * size, dtype).to(device)
    mine = torch.empty(block, dtype=dtype, device=device)
    dist.reduce_scatter_tensor(mine, full)
    total = reference([value(r, block * size, dtype) for r in range(size)], "sum", dtype)
    check_equal(mine.cpu(), total[rank * block:(rank + 1) * block], f"reduce_scatter_tensor {dtype}")

# On a side stream: the input is produced there, the collective must run
# after it and before what follows there.
side = torch.cuda.Stream(device)
with torch.cuda.stream(side):
    t = torch.full((1 << 22,), float(rank + 1), device=device)
    t.mul_(2)
    dist.all_reduce(t)
    t.add_(1)
side.synchronize()
check_equal(t.cpu(), torch.full((1 << 22,), float(size * (size + 1) + 1)), "all_reduce on a side stream")

# Asynchronous, with a future whose value is the reduced tensor.
t = value(rank, 5000, torch.float32).to(device)
work = dist.all_reduce(t, async_op=True)
got = work.get_future().wait()[0]
work.wait()
torch.cuda.synchronize(device)
check_equal(got.cpu(), reference([value(r, 5000, torch.float32) for r in range(size)], "sum", torch.float32),
            "async all_reduce future")

# Asynchronous on a side stream, waited for from the default stream with no
# host synchronization: wait() must make the default stream wait for it.
side2 = torch.cuda.Stream(device)
with torch.cuda.stream(side2):
    u = torch.full((1 << 22,), float(rank + 1), device=device)
    work = dist.all_reduce(u, async_op=True)
work.wait()
v = u * 1  # on the default stream, after the collective
check_equal(v.cpu(), torch.full((1 << 22,), float(size * (size + 1) // 2)), "async all_reduce waited from another stream")

# List forms, through one flat buffer on the GPU.
outs = [torch.empty(5, device=device) for _ in range(size)]
dist.all_gather(outs, value(rank, 5, torch.float32).to(device))
for r in range(size):
    check_equal(outs[r].cpu(), value(r, 5, torch.float32), f"all_gather list from rank {r}")

# A CPU input next to a CUDA output: refused, naming both devices.
try:
    dist.all_gather_into_tensor(torch.empty(size * 4, device=device), torch.ones(4))
    raise AssertionError("a CPU input with a CUDA output did not raise")
except RuntimeError as error:
    assert "one device" in str(error), error

finish("cuda_collectives")
