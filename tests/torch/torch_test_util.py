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


class RoundingCheck:
    """The rounding reference of a training test: the plain model trained
    again beside it in float64, the same steps with other rounding. Each
    step, the distributed model's weights must be about as close to that
    reference as the plain float32 model's are: rounding alone puts the plain
    model at some distance from float64 arithmetic, and summing the gradient
    in another order (over ranks) may move the distributed model by about as
    much again, not by more. A bug that stays under the tests' rtol (a slice
    lost from an average, a stale bucket) shows up here, since rounding alone
    cannot explain it. Distances are per tensor, relative to its largest
    value, with float32's epsilon as the least noise."""

    FACTOR = 4.0

    def __init__(self, name):
        self.name, self.rows = name, []

    @staticmethod
    def distance(tensors, exact):
        worst = 0.0
        for a, e in zip(tensors, exact):
            a, e = a.detach().double(), e.detach()
            if e.numel():
                worst = max(worst, ((a - e).abs().max() / e.abs().max().clamp_min(1e-30)).item())
        return worst

    def add(self, step, distributed, plain, exact):
        exact = list(exact)
        self.rows.append((step, self.distance(distributed, exact), self.distance(plain, exact)))

    def finish(self):
        """Prints the table on rank 0 and fails where a step is further from
        the reference than FACTOR times the plain model's rounding noise."""
        floor = torch.finfo(torch.float32).eps
        if dist.get_rank() == 0:
            print(f"{self.name}: distance from the float64 reference, distributed vs plain float32 (the noise)")
            for step, d, n in self.rows:
                print(f"  step {step:2d}  distributed {d:.2e}  plain {n:.2e}  ratio {d / max(n, floor):.2f}")
        for step, d, n in self.rows:
            if d > self.FACTOR * max(n, floor):
                raise AssertionError(f"rank {dist.get_rank()} {self.name} step {step}: the weights are {d:.2e} "
                                     f"from the float64 reference, more than {self.FACTOR:g}x the plain model's "
                                     f"rounding noise {n:.2e}: not a rounding difference")


def finish(name):
    dist.barrier()
    if dist.get_rank() == 0:
        print(f"PASS: {name} on {dist.get_world_size()} ranks "
              f"(MATEX_VIRTUAL_NODES={os.environ.get('MATEX_VIRTUAL_NODES', 'none')})", flush=True)
    dist.destroy_process_group()
    sys.stdout.flush()
