"""The PyTorch backend on the GPU machine (bench/gpu/gpu_check.sh runs it
under mpirun): matex against the reference backend torch itself offers,
through torch.distributed, on the same tensors.

Reference: NCCL on one rank; gloo on several (NCCL refuses two ranks on one
GPU, and the GPU machine has one), fed with host copies. What it checks:
  - all_reduce (sum; float32 and int32), all_gather_into_tensor and
    reduce_scatter_tensor, on small integers whose sums are exact in any
    order, so matex's result must equal the reference's bit for bit;
  - one DDP step of a small model: the same seed, data sharded by rank, SGD;
    the parameters after the step on the matex process group against the
    same step on the reference group (the average of two gradients is exact
    in any order, so here too the bits must be equal);
  - time: median of --iters calls of each collective at --mib MiB on matex
    and on the reference (device synchronized after each call).
Prints one TORCH_CHECK line per check and, last, on rank 0:
  TORCH_SUMMARY ranks=N device=cuda|cpu reference=nccl|gloo checks=C wrong=W
    allreduce_matex_us=.. allreduce_ref_us=.. allgather_matex_us=..
    allgather_ref_us=.. reduce_scatter_matex_us=.. reduce_scatter_ref_us=.. mib=M
which gpu_check.sh turns into its summary rows. --device cpu runs the same on
host tensors (for checking the script on a machine without a GPU). Exit 0
when every check held, 1 when one did not, 77 when the device is missing.
"""
import argparse
import os
import sys
import time

import torch
import torch.distributed as dist


def parse():
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    parser.add_argument("--mib", type=float, default=64.0, help="size of the timed calls")
    parser.add_argument("--iters", type=int, default=10)
    return parser.parse_args()


def synchronize(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def small_integers(rank, count, dtype, device):
    """Exact inputs: values 1..11, so sums over a few ranks stay exact."""
    i = torch.arange(count, dtype=torch.int64)
    return ((i * 7 + rank * 3) % 11 + 1).to(dtype).to(device)


class Reference:
    """The reference backend's group; gloo gets host copies and returns
    results on the caller's device."""

    def __init__(self, device, size):
        self.name = "nccl" if device.type == "cuda" and size == 1 else "gloo"
        self.group = dist.new_group(backend=self.name)
        self.device = device
        self.host = self.name == "gloo"

    def _in(self, t):
        return t.cpu() if self.host else t

    def all_reduce(self, t):
        x = self._in(t.clone())
        dist.all_reduce(x, group=self.group)
        return x.to(self.device)

    def all_gather(self, out_shape, t):
        x = self._in(t)
        out = torch.empty(out_shape, dtype=t.dtype, device=x.device)
        dist.all_gather_into_tensor(out, x, group=self.group)
        return out.to(self.device)

    def reduce_scatter(self, out_shape, t):
        x = self._in(t)
        out = torch.empty(out_shape, dtype=t.dtype, device=x.device)
        self.reduce_scatter_into(out, x)
        return out.to(self.device)

    def reduce_scatter_into(self, out, x):
        """reduce_scatter_tensor; where this torch's gloo lacks it, an
        all_reduce and this rank's block (the summary says so)."""
        if not self.rs_by_allreduce:
            try:
                dist.reduce_scatter_tensor(out, x, group=self.group)
                return
            except (RuntimeError, NotImplementedError):
                self.rs_by_allreduce = True
        full = x.clone()
        dist.all_reduce(full, group=self.group)
        n = out.numel()
        out.copy_(full[dist.get_rank() * n:(dist.get_rank() + 1) * n])

    rs_by_allreduce = False


def median_us(device, iters, call):
    times = []
    for _ in range(iters):
        synchronize(device)
        start = time.perf_counter()
        call()
        synchronize(device)
        times.append(time.perf_counter() - start)
    times.sort()
    return times[len(times) // 2] * 1e6


def ddp_step(model_seed, rank, size, device, group):
    from torch.nn.parallel import DistributedDataParallel as DDP
    torch.manual_seed(model_seed)
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 4)).to(device)
    ddp = DDP(model, device_ids=[device.index] if device.type == "cuda" else None, process_group=group)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=0.125)
    generator = torch.Generator().manual_seed(1234)
    data = torch.randn(8 * size, 32, generator=generator)[rank * 8:(rank + 1) * 8].to(device)
    target = torch.randn(8 * size, 4, generator=generator)[rank * 8:(rank + 1) * 8].to(device)
    loss = torch.nn.functional.mse_loss(ddp(data), target)
    loss.backward()
    optimizer.step()
    synchronize(device)
    return [p.detach().cpu().clone() for p in model.parameters()]


def main():
    args = parse()
    if args.device == "cuda" and not torch.cuda.is_available():
        print("SKIPPED: no GPU (torch sees no CUDA device)", flush=True)
        return 77
    import matex_torch  # noqa: F401  (the backend's entry point, and the extension)
    local = int(os.environ.get("OMPI_COMM_WORLD_LOCAL_RANK", "0"))
    if args.device == "cuda":
        device = torch.device("cuda", local % torch.cuda.device_count())
        torch.cuda.set_device(device)
        dist.init_process_group("matex", device_id=device)
    else:
        device = torch.device("cpu")
        dist.init_process_group("matex")
    rank, size = dist.get_rank(), dist.get_world_size()
    reference = Reference(device, size)
    checks = wrong = 0

    def check(name, got, want):
        nonlocal checks, wrong
        checks += 1
        same = got.shape == want.shape and torch.equal(got.cpu(), want.cpu())
        if size > 1:  # every rank's verdict, through the reference (gloo, host memory)
            ok = torch.tensor([1 if same else 0], dtype=torch.int32)
            dist.all_reduce(ok, op=dist.ReduceOp.MIN, group=reference.group)
            same = bool(ok.item())
        if not same:
            wrong += 1
        if rank == 0:
            print(f"TORCH_CHECK {name} {'ok' if same else 'WRONG'}", flush=True)

    for dtype in (torch.float32, torch.int32):
        for count in (1, 13 * size + 1, 1 << 20):
            t = small_integers(rank, count, dtype, device)
            mine = t.clone()
            dist.all_reduce(mine)
            check(f"all_reduce_{str(dtype)[6:]}_x{count}", mine, reference.all_reduce(t))
        block = 4099
        t = small_integers(rank, block, dtype, device)
        out = torch.empty(size * block, dtype=dtype, device=device)
        dist.all_gather_into_tensor(out, t)
        check(f"all_gather_into_tensor_{str(dtype)[6:]}", out, reference.all_gather((size * block,), t))
        full = small_integers(rank + 1, size * block, dtype, device)
        part = torch.empty(block, dtype=dtype, device=device)
        dist.reduce_scatter_tensor(part, full)
        check(f"reduce_scatter_tensor_{str(dtype)[6:]}", part, reference.reduce_scatter((block,), full))

    matex_params = ddp_step(7, rank, size, device, None)
    # The same device for both (gloo reduces CUDA tensors for DDP), so the gradients are the same bits.
    ref_params = ddp_step(7, rank, size, device, reference.group)
    for i, (a, b) in enumerate(zip(matex_params, ref_params)):
        check(f"ddp_step_param{i}", a, b)

    count = max(size, int(args.mib * (1 << 20) / 4) // size * size)
    x = small_integers(rank, count, torch.float32, device)
    x_ref = x.cpu() if reference.host else x
    part = torch.empty(count // size, dtype=torch.float32, device=device)
    part_ref = part.cpu() if reference.host else part
    gathered = torch.empty(count * size, dtype=torch.float32, device=device)
    gathered_ref = gathered.cpu() if reference.host else gathered
    timings = {}
    for name, mine, theirs in (
            ("allreduce", lambda: dist.all_reduce(x),
             lambda: dist.all_reduce(x_ref, group=reference.group)),
            ("allgather", lambda: dist.all_gather_into_tensor(gathered, x),
             lambda: dist.all_gather_into_tensor(gathered_ref, x_ref, group=reference.group)),
            ("reduce_scatter", lambda: dist.reduce_scatter_tensor(part, x),
             lambda: reference.reduce_scatter_into(part_ref, x_ref))):
        mine()
        theirs()  # warm-up: buffers, communicators
        timings[name] = (median_us(device, args.iters, mine), median_us(device, args.iters, theirs))
    dist.barrier()
    if rank == 0:
        figures = " ".join(f"{name}_matex_us={m:.1f} {name}_ref_us={r:.1f}" for name, (m, r) in timings.items())
        print(f"TORCH_SUMMARY ranks={size} device={device.type} reference={reference.name} checks={checks} "
              f"wrong={wrong} {figures} mib={args.mib:g} ref_reduce_scatter="
              f"{'allreduce' if reference.rs_by_allreduce else 'native'}", flush=True)
    dist.destroy_process_group()
    return 0 if wrong == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
