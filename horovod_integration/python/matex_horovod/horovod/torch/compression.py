"""Gradient compression for horovod.torch: none, or float16 on the wire."""
import torch

from ..common.compression import Compressor, NoneCompressor, compression_for  # noqa: F401

Compression = compression_for(lambda t: t.dtype.is_floating_point, lambda t, dtype: t.type(dtype), torch.float16)
FP16Compressor = Compression.fp16
