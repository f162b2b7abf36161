"""A plain PyTorch DDP script in the shape of PyTorch's DDP tutorial, with
nothing of matex in it: gloo on CPU, rank and world size from the
environment, a DistributedSampler that gives each rank its share of the data,
and the global batch split over the ranks. Run it plainly on one process:

    python examples/torch_ddp_tutorial.py

or data-parallel on matex, unchanged:

    MATEX_ENABLE=1 mpirun -np 2 python examples/torch_ddp_tutorial.py

It prints the loss of the global batch at every step (the mean over ranks of
their slices' losses), so both runs print the same curve."""
import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.optim as optim
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

GLOBAL_BATCH = 32
STEPS = 12


class ToyModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.net1 = nn.Linear(10, 64)
        self.relu = nn.ReLU()
        self.net2 = nn.Linear(64, 5)

    def forward(self, x):
        return self.net2(self.relu(self.net1(x)))


def setup(rank, world_size):
    os.environ.setdefault("MASTER_ADDR", "localhost")
    os.environ.setdefault("MASTER_PORT", "12355")
    dist.init_process_group("gloo", rank=rank, world_size=world_size)


def main():
    rank = int(os.environ.get("RANK", "0"))
    world_size = int(os.environ.get("WORLD_SIZE", "1"))
    setup(rank, world_size)
    torch.manual_seed(0)
    data = TensorDataset(torch.randn(GLOBAL_BATCH * STEPS, 10), torch.randn(GLOBAL_BATCH * STEPS, 5))
    sampler = DistributedSampler(data, num_replicas=world_size, rank=rank, shuffle=False)
    loader = DataLoader(data, batch_size=GLOBAL_BATCH // world_size, sampler=sampler)

    model = DDP(ToyModel())
    loss_fn = nn.MSELoss()
    optimizer = optim.SGD(model.parameters(), lr=0.05)
    for step, (inputs, labels) in enumerate(loader):
        optimizer.zero_grad()
        loss = loss_fn(model(inputs), labels)
        loss.backward()
        optimizer.step()
        reported = loss.detach().clone()
        dist.all_reduce(reported)
        if rank == 0:
            print(f"step {step} loss {reported.item() / world_size:.9g}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
