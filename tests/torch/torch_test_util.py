"""Shared by the torch tests: start the process group on matex under mpirun
(through the entry point and the launcher's variables, as users do), and
exact inputs whose references every rank can compute for every other."""
import os
import sys

import torch
import torch.distributed as dist

FLOATING = (torch.float16, torch.bfloat16, torch.float32, torch.float64)
INTEGER = (torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64)
REDUCIBLE = (torch.bool,) + INTEGER + FLOATING


def start(backend="matex", device_id=None):
    dist.init_process_group(backend, device_id=device_id)
    cpu = dist.group.WORLD._get_backend(torch.device("cpu"))
    assert cpu.name() == "matex", f"CPU traffic goes to {cpu.name()}, not matex"
    return dist.get_rank(), dist.get_world_size()


def value(rank, count, dtype, op="sum", salt=0):
    """Rank `rank`'s input: small integers, so that sums, products, minima
    and maxima are exact in every dtype (products stay at most 2**size)."""
    i = torch.arange(count, dtype=torch.int64)
    if dtype == torch.bool:
        return ((i + rank + salt) % 3 == 0)
    if op == "prod":
        raw = 1 + (i + rank + salt) % 2
    elif op in ("band", "bor", "bxor"):
        raw = (i * 37 + rank * 11 + salt) % 120
    else:
        raw = (i * 7 + rank * 3 + salt) % 11 + 1
    return raw.to(dtype)


def reference(inputs, op, dtype):
    """op over the ranks' inputs, computed in int64/float64 and cast back."""
    if dtype == torch.bool:
        stack = torch.stack([x.to(torch.int64) for x in inputs])
        result = {"sum": stack.amax(0), "max": stack.amax(0), "prod": stack.amin(0), "min": stack.amin(0),
                  "band": stack.amin(0), "bor": stack.amax(0),
                  "bxor": stack.sum(0) % 2}[op]
        return result.to(torch.bool)
    wide = torch.float64 if dtype in FLOATING else torch.int64
    stack = torch.stack([x.to(wide) for x in inputs])
    if op in ("sum", "premul"):
        result = stack.sum(0)
    elif op == "avg":
        result = stack.sum(0) / len(inputs)
    elif op == "prod":
        result = stack.prod(0)
    elif op == "min":
        result = stack.amin(0)
    elif op == "max":
        result = stack.amax(0)
    else:
        result = stack[0].clone()
        for other in stack[1:]:
            result = {"band": torch.bitwise_and, "bor": torch.bitwise_or, "bxor": torch.bitwise_xor}[op](result, other)
    return result.to(dtype)


def check_equal(actual, expected, what):
    if actual.dtype != expected.dtype or actual.shape != expected.shape or not torch.equal(actual, expected):
        bad = (actual != expected).nonzero()[:5].flatten().tolist() if actual.shape == expected.shape else "shape"
        raise AssertionError(f"rank {dist.get_rank()}: {what}: got {actual.dtype}{list(actual.shape)} "
                             f"expected {expected.dtype}{list(expected.shape)}; first differences at {bad}: "
                             f"{actual.flatten()[:8].tolist()} vs {expected.flatten()[:8].tolist()}")


def counts(size):
    """Edge counts: empty, one, primes, and non-multiples of the rank count."""
    return [0, 1, 7, 13 * size + 1, 4099]


def finish(name):
    dist.barrier()
    if dist.get_rank() == 0:
        print(f"PASS: {name} on {dist.get_world_size()} ranks "
              f"(MATEX_VIRTUAL_NODES={os.environ.get('MATEX_VIRTUAL_NODES', 'none')})", flush=True)
    dist.destroy_process_group()
    sys.stdout.flush()
