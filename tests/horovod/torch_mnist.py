"""A PyTorch MNIST script in the shape of Horovod's published
pytorch_mnist.py: a DistributedSampler shards the data by hvd.rank(), SGD
with momentum at a rate scaled by the number of ranks, broadcast_parameters
and broadcast_optimizer_state from rank 0, hvd.DistributedOptimizer with
named parameters, a test pass whose figures are averaged with
hvd.allreduce, and a checkpoint that rank 0 saves.

Every rank then checks each step against Horovod's semantics, computed in
float64 from the parameters and momentum buffers the step started from: the
mean of every rank's gradient on its own shard, applied by SGD with momentum
(buf = momentum buf + g; p -= lr buf). Step by step, so that rounding is not
amplified into the comparison (keras_mnist.py says why). It also checks the
averaged test figures and the saved checkpoint.
Usage: torch_mnist.py OUTPUT_FOLDER"""
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F
import torch.utils.data.distributed

import horovod.torch as hvd
from hvd_test_util import check_equal, check_moved, check_training_step, synthetic_mnist

out_dir = sys.argv[1]
hvd.init()
torch.manual_seed(42 + hvd.rank())  # different models until broadcast_parameters
torch.set_num_threads(1)

images, labels = synthetic_mnist(384, seed=2)
train_dataset = torch.utils.data.TensorDataset(torch.from_numpy(images).permute(0, 3, 1, 2),
                                               torch.from_numpy(labels))
test_dataset = torch.utils.data.TensorDataset(*(t[:96] for t in train_dataset.tensors))
batch_size, epochs, lr, momentum = 12, 2, 0.02, 0.5


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(1, 4, kernel_size=5)
        self.bn = torch.nn.BatchNorm2d(4)
        self.fc1 = torch.nn.Linear(4 * 12 * 12, 10)

    def forward(self, x):
        x = F.relu(F.max_pool2d(self.bn(self.conv1(x)), 2))
        return F.log_softmax(self.fc1(x.flatten(1)), dim=1)


def loader(dataset, rank, size, epoch):
    sampler = torch.utils.data.distributed.DistributedSampler(dataset, num_replicas=size, rank=rank, seed=7)
    sampler.set_epoch(epoch)
    return torch.utils.data.DataLoader(dataset, batch_size=batch_size, sampler=sampler)


model = Net()
optimizer = torch.optim.SGD(model.parameters(), lr=lr * hvd.size(), momentum=momentum)
hvd.broadcast_parameters(model.state_dict(), root_rank=0)
hvd.broadcast_optimizer_state(optimizer, root_rank=0)
initial = {k: v.clone() for k, v in model.state_dict().items()}
optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters(), op=hvd.Average)


def metric_average(val, name):
    return hvd.allreduce(torch.tensor(val), name=name).item()


def test(net, shard_rank, size):
    net.eval()
    test_loss = test_accuracy = 0.0
    data = loader(test_dataset, shard_rank, size, 0)
    with torch.no_grad():
        for x, y in data:
            output = net(x)
            test_loss += F.nll_loss(output, y, reduction="sum").item()
            test_accuracy += output.argmax(1).eq(y).float().sum().item()
    samples = len(data.sampler)
    return test_loss / samples, test_accuracy / samples


states = []  # (parameters, momentum buffers) after each step
for epoch in range(epochs):
    model.train()
    for batch_idx, (data, target) in enumerate(loader(train_dataset, hvd.rank(), hvd.size(), epoch)):
        optimizer.zero_grad()
        loss = F.nll_loss(model(data), target)
        loss.backward()
        optimizer.step()
        states.append(([p.detach().clone() for p in model.parameters()],
                       [optimizer.state[p]["momentum_buffer"].clone() for p in model.parameters()]))
        if batch_idx % 8 == 0 and hvd.rank() == 0:
            print(f"Train Epoch: {epoch} [{batch_idx}]\tLoss: {loss.item():.6f}", flush=True)
local_loss, local_accuracy = test(model, hvd.rank(), hvd.size())
test_loss, test_accuracy = metric_average(local_loss, "avg_loss"), metric_average(local_accuracy, "avg_accuracy")
if hvd.rank() == 0:
    print(f"Test set: Average loss: {test_loss:.4f}, Accuracy: {100.0 * test_accuracy:.2f}%", flush=True)
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict()}, os.path.join(out_dir, "ckpt.pt"))
trained = {k: v.clone() for k, v in model.state_dict().items()}

# ---- every step against Horovod's semantics, from the state it started from -----------------------------------------
size = hvd.size()
reference = Net()
reference.train()
parameters = [initial[name] for name, _ in model.named_parameters()]
buffers = None
worst, k = 0.0, 0
for epoch in range(epochs):
    batches = [list(loader(train_dataset, r, size, epoch)) for r in range(size)]
    for step in range(len(batches[0])):
        with torch.no_grad():
            for p, value in zip(reference.parameters(), parameters):
                p.copy_(value)
        grads = []
        for r in range(size):
            reference.zero_grad()
            F.nll_loss(reference(batches[r][step][0]), batches[r][step][1]).backward()
            grads.append([p.grad.double() for p in reference.parameters()])
        mean = [torch.stack(g).mean(0) for g in zip(*grads)]
        expected_buffers = mean if buffers is None else [momentum * b.double() + g for b, g in zip(buffers, mean)]
        expected = [p.double() - lr * size * b for p, b in zip(parameters, expected_buffers)]
        parameters, buffers = states[k]
        worst = max(worst, check_training_step(parameters, expected, f"step {k}: parameters"),
                    check_training_step(buffers, expected_buffers, f"step {k}: momentum buffers"))
        k += 1
assert k == len(states), (k, len(states))
moved = check_moved(states[-1][0], [initial[name] for name, _ in model.named_parameters()], worst, "torch loop")
# The test figures: every rank's own, averaged by hvd.allreduce
everyone = hvd.allgather_object((local_loss, local_accuracy))
check_equal([test_loss, test_accuracy], np.mean(everyone, 0), "averaged test figures", rtol=1e-6)

# ---- the checkpoint rank 0 saved restores the trained state ---------------------------------------------------------
hvd.barrier()
saved = torch.load(os.path.join(out_dir, "ckpt.pt"))
root_trained = hvd.broadcast_object({k: v.numpy() for k, v in trained.items()}, root_rank=0)
for k, v in saved["model"].items():
    check_equal(v, root_trained[k], f"checkpoint {k}")
restored = torch.optim.SGD(Net().parameters(), lr=1.0, momentum=momentum)
restored.load_state_dict(saved["optimizer"])
assert restored.param_groups[0]["lr"] == lr * size, restored.param_groups[0]["lr"]
if hvd.rank() == 0:
    print(f"torch loop on {size} ranks: every step equals Horovod's semantics to {worst:.3g} (weights moved "
          f"{moved:.3g})", flush=True)
