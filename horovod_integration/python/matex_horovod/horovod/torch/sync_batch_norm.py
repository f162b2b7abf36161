"""hvd.SyncBatchNorm: batch normalization whose statistics cover every
rank's batch, so N ranks of batch B normalize as one process of batch N*B.

Training: each rank sums x over its batch and counts its elements; an
allreduce (sum) makes the global mean; a second one sums the squares about
it into the (biased) variance, in float32 at least. The allreduces are
differentiable (each one's gradient is the sum of the ranks' gradients), so
autograd gives each rank the gradient of the global normalization. Running statistics use the unbiased global variance.
Evaluation uses the running statistics, as BatchNorm does.
"""
import torch
from torch.nn.modules.batchnorm import _BatchNorm

from . import mpi_ops


class SyncBatchNorm(_BatchNorm):
    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True):
        super().__init__(num_features, eps, momentum, affine, track_running_stats)

    def _check_input_dim(self, input):
        if input.dim() < 2:
            raise ValueError(f"horovod.torch.SyncBatchNorm: expected at least 2D input, got {input.dim()}D")

    def forward(self, input):
        self._check_input_dim(input)
        if not self.training and self.track_running_stats:
            return torch.nn.functional.batch_norm(input, self.running_mean, self.running_var, self.weight,
                                                  self.bias, False, 0.0, self.eps)
        dims = [0] + list(range(2, input.dim()))
        # Statistics in float32 at least (float16 sums overflow, bfloat16 counts stop being exact), and in
        # two passes (the mean, then the squares about it), which stays accurate for data far from zero.
        stat_dtype = torch.float64 if input.dtype == torch.float64 else torch.float32
        x = input.to(stat_dtype)
        channels = input.shape[1]
        count = torch.tensor([float(input.numel() // channels)], dtype=stat_dtype, device=input.device)
        total = mpi_ops.allreduce(torch.cat([x.sum(dims), count]), op=mpi_ops.Sum)
        n = total[-1]
        shape = [1, channels] + [1] * (input.dim() - 2)
        mean = total[:channels] / n
        centered = x - mean.reshape(shape)
        var = mpi_ops.allreduce((centered * centered).sum(dims), op=mpi_ops.Sum) / n
        if self.training and self.track_running_stats:
            with torch.no_grad():
                self.num_batches_tracked += 1
                momentum = (1.0 / float(self.num_batches_tracked) if self.momentum is None else self.momentum)
                unbiased = var * (n / (n - 1)) if float(n) > 1 else var
                self.running_mean.mul_(1 - momentum).add_(momentum * mean.to(self.running_mean.dtype))
                self.running_var.mul_(1 - momentum).add_(momentum * unbiased.to(self.running_var.dtype))
        out = centered * torch.rsqrt(var.reshape(shape) + self.eps)
        if self.affine:
            out = out * self.weight.to(stat_dtype).reshape(shape) + self.bias.to(stat_dtype).reshape(shape)
        return out.to(input.dtype)
