"""The check that every rank hands fit and evaluate the same arrays.

matex slices each global batch across ranks, which equals one process only if
every rank starts from the same data. A script that draws its data from an
unseeded generator (np.random.default_rng() with no seed differs per process)
or loads a per-process file would silently train on a mixture, so fit and
evaluate compare a digest of their NumPy / eager-tensor arguments across ranks
first (two small allgathers) and raise, naming the argument, when they differ.
The digest samples about 4096 elements per array (its size and a CRC-32 of
their bytes): cheap for any array, and blind only to differences between the
sampled elements. tf.data datasets and generators are not checked.
"""
import zlib

import numpy as np
import tensorflow as tf

from . import _collectives, _runtime

_SAMPLES = 4096
_CHECKED = ("x", "y", "sample_weight", "validation_data")


def _arrays(value):
    for leaf in tf.nest.flatten(value):
        if isinstance(leaf, np.ndarray):
            yield leaf
        elif isinstance(leaf, tf.Tensor) and tf.executing_eagerly() and not isinstance(leaf, tf.RaggedTensor):
            yield leaf.numpy()


def _digest(array):
    """[size, crc32 of the sampled elements' bytes]: exact and the same on any
    CPU (no floating-point sums); object arrays (Python strings) by size only."""
    array = np.asarray(array)
    if array.dtype.kind == "O" or array.size == 0:
        return [float(array.size), 0.0]
    sample = array.flat[np.arange(0, array.size, max(1, array.size // _SAMPLES))]  # no copy of the whole
    return [float(array.size), float(zlib.crc32(np.ascontiguousarray(sample).tobytes()))]


def check_same_arrays(arguments, call):
    """Raises on every rank when the ranks passed `call` (fit, evaluate) different arrays."""
    if _runtime.size() == 1:
        return
    digests, owners = [], []
    for name in _CHECKED:
        for array in _arrays(arguments.get(name)):
            part = _digest(array)
            digests += part
            owners += [name] * len(part)
    difference = _collectives.first_difference_from_rank0(digests, tf.float64)
    if difference is not None:
        rank, index, _, _ = difference
        what = f"'{owners[index]}'" if index < len(owners) else "its arguments"
        raise ValueError(f"matex: the ranks passed {call} different data: rank {rank}'s {what} differs from rank "
                         f"0's. Every rank must load the same data (matex gives each rank its slice of every "
                         f"global batch); seed the generator that produces it (np.random.default_rng() without a "
                         f"seed differs per process), or set MATEX_ENABLE=0 to run the script as it is")
