"""DDP on matex: N ranks, each on its slice of the global batch, must give the
gradients, weights and buffers of one plain process (no DDP, no process
group) running the same global batch, at rtol 1e-5, for 10 steps. The model
has BatchNorm (buffers, broadcast from rank 0 at each forward) and a layer the
forward never uses (find_unused_parameters=True). The plain reference runs
the same slices through one model, as one process would with a batch of
slices: BatchNorm takes each slice's statistics, and the running statistics
follow slice 0 (rank 0's, which DDP broadcasts)."""
import copy

import torch
import torch.nn as nn
from torch.func import functional_call
from torch.nn.parallel import DistributedDataParallel as DDP

from torch_test_util import RoundingCheck, finish, start

rank, size = start()
torch.manual_seed(1234)
GLOBAL_BATCH = 24  # divisible by 1, 2, 3 and 4


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.inp = nn.Linear(10, 32)
        self.norm = nn.BatchNorm1d(32)
        self.out = nn.Linear(32, 3)
        self.unused = nn.Linear(32, 3)  # never in the forward

    def forward(self, x):
        return self.out(torch.relu(self.norm(self.inp(x))))


plain = Net()
exact = copy.deepcopy(plain).double()  # the rounding reference: the plain model in float64
model = DDP(copy.deepcopy(plain), find_unused_parameters=True, bucket_cap_mb=0.001)  # several buckets
opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
plain_opt = torch.optim.SGD(plain.parameters(), lr=0.1, momentum=0.9)
exact_opt = torch.optim.SGD(exact.parameters(), lr=0.1, momentum=0.9)
loss_fn = nn.MSELoss()
tolerance = dict(rtol=1e-5, atol=1e-6)
rounding = RoundingCheck("ddp_exact")


def plain_step(net, optimizer, xs, ys):
    """One step of one process on the global batch, given as its slices;
    returns the buffers that rank `rank` would hold after its forward."""
    optimizer.zero_grad()
    params = dict(net.named_parameters())
    losses = []
    my_buffers = None
    before = {n: b.clone() for n, b in net.named_buffers()}
    for r in range(size):
        # Slice 0 updates the plain model's own running statistics; the
        # others' updates land in copies (rank r's, before the next broadcast).
        buffers = {n: (b if r == 0 else before[n].clone()) for n, b in net.named_buffers()}
        losses.append(loss_fn(functional_call(net, {**params, **buffers}, (xs[r],)), ys[r]))
        if r == rank:
            my_buffers = {n: b.clone() for n, b in buffers.items()}
    torch.stack(losses).mean().backward()
    return my_buffers


for step in range(10):
    generator = torch.Generator().manual_seed(step)
    x = torch.randn(GLOBAL_BATCH, 10, generator=generator)
    y = torch.randn(GLOBAL_BATCH, 3, generator=generator)
    xs, ys = x.chunk(size), y.chunk(size)

    opt.zero_grad()
    loss = loss_fn(model(xs[rank]), ys[rank])
    loss.backward()
    my_buffers = plain_step(plain, plain_opt, xs, ys)
    plain_step(exact, exact_opt, x.double().chunk(size), y.double().chunk(size))

    for (name, p), (_, q) in zip(model.module.named_parameters(), plain.named_parameters()):
        if name.startswith("unused"):
            assert p.grad is None and q.grad is None, f"step {step}: {name} got a gradient"
            continue
        torch.testing.assert_close(p.grad, q.grad, **tolerance, msg=lambda m: f"rank {rank} step {step} grad {name}: {m}")
    for name, b in model.module.named_buffers():
        torch.testing.assert_close(b, my_buffers[name], **tolerance,
                                   msg=lambda m: f"rank {rank} step {step} buffer {name}: {m}")
    opt.step()
    plain_opt.step()
    exact_opt.step()
    for (name, p), (_, q) in zip(model.module.named_parameters(), plain.named_parameters()):
        torch.testing.assert_close(p, q, **tolerance, msg=lambda m: f"rank {rank} step {step} weight {name}: {m}")
    rounding.add(step, model.module.parameters(), plain.parameters(), exact.parameters())

rounding.finish()
finish("ddp_exact")
