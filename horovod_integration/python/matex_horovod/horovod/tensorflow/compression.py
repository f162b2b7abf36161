"""Gradient compression for horovod.tensorflow: none, or float16 on the wire."""
import tensorflow as tf

from ..common.compression import Compressor, NoneCompressor, compression_for  # noqa: F401

Compression = compression_for(lambda t: t.dtype.is_floating, tf.cast, tf.float16)
FP16Compressor = Compression.fp16
