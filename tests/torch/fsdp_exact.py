"""FSDP2 (fully_shard) and, on 4 ranks, HSDP (a 2 x 2 mesh: replicate x
shard) on matex: N ranks on their slices must give the weights and gradients
of one plain process on the global batch, at rtol 1e-5, for 10 steps. The
gradient divide factor is set to the world size, so reduce_scatter runs as
PREMUL_SUM (1/N); the first steps run with the default AVG."""
import copy

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard

from torch_test_util import RoundingCheck, finish, start

rank, size = start()
torch.manual_seed(4321)
GLOBAL_BATCH = 24

plain = nn.Sequential(nn.Linear(12, 40), nn.Tanh(), nn.Linear(40, 40), nn.Tanh(), nn.Linear(40, 5))
model = copy.deepcopy(plain)
exact = copy.deepcopy(plain).double()  # the rounding reference: the plain model in float64
hybrid = size == 4
if hybrid:
    mesh = init_device_mesh("cpu", (2, 2), mesh_dim_names=("replicate", "shard"))
else:
    mesh = init_device_mesh("cpu", (size,))
for layer in model:
    if isinstance(layer, nn.Linear):
        fully_shard(layer, mesh=mesh)
fully_shard(model, mesh=mesh)
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
plain_opt = torch.optim.Adam(plain.parameters(), lr=1e-2)
exact_opt = torch.optim.Adam(exact.parameters(), lr=1e-2)
loss_fn = nn.MSELoss()
tolerance = dict(rtol=1e-5, atol=1e-6)
rounding = RoundingCheck("fsdp_exact")

for step in range(10):
    if step == 5:
        model.set_gradient_divide_factor(float(size))
    generator = torch.Generator().manual_seed(100 + step)
    x = torch.randn(GLOBAL_BATCH, 12, generator=generator)
    y = torch.randn(GLOBAL_BATCH, 5, generator=generator)
    opt.zero_grad()
    loss_fn(model(x.chunk(size)[rank]), y.chunk(size)[rank]).backward()
    plain_opt.zero_grad()
    loss_fn(plain(x), y).backward()  # the whole global batch at once
    exact_opt.zero_grad()
    loss_fn(exact(x.double()), y.double()).backward()
    for (name, p), (_, q) in zip(model.named_parameters(), plain.named_parameters()):
        torch.testing.assert_close(p.grad.full_tensor(), q.grad, **tolerance,
                                   msg=lambda m: f"rank {rank} step {step} grad {name}: {m}")
    opt.step()
    plain_opt.step()
    exact_opt.step()
    for (name, p), (_, q) in zip(model.named_parameters(), plain.named_parameters()):
        torch.testing.assert_close(p.full_tensor(), q, **tolerance,
                                   msg=lambda m: f"rank {rank} step {step} weight {name}: {m}")
    rounding.add(step, [p.full_tensor() for p in model.parameters()], plain.parameters(), exact.parameters())

rounding.finish()
finish("fsdp_exact (HSDP 2x2)" if hybrid else "fsdp_exact")
