"""hvd.DistributedGradientTape: a tf.GradientTape whose gradient() returns
the gradients averaged across ranks.

The returned object is of a subclass of the tape's own class that shares the
recorded tape, so `with tf.GradientTape() as tape: ...` followed by
`tape = hvd.DistributedGradientTape(tape)` works as in Horovod. Sources
registered with register_local_source() are not averaged; with
scale_local_gradients their gradients are divided by the number of ranks.
"""
import tensorflow as tf

from ..common import process_sets
from ..common import reduce_ops as _ops
from .compression import Compression
from .gradients import GradientAverager
from .runtime import runtime


class _DistributedTapeMixin:
    def gradient(self, target, sources, output_gradients=None, use_generic_names=False, **kwargs):
        grads = super().gradient(target, sources, output_gradients=output_gradients, **kwargs)
        flat = tf.nest.flatten(grads)
        flat_sources = tf.nest.flatten(sources)
        local = [self._hvd_is_local(s) for s in flat_sources]
        shared = [None if is_local else g for g, is_local in zip(flat, local)]
        averaged = self._hvd_averager(shared)
        size = runtime.size
        out = []
        for g, is_local, avg in zip(flat, local, averaged):
            if is_local and g is not None and self._hvd_scale_local:
                g = g / tf.cast(size, g.dtype)
            out.append(g if is_local else avg)
        return tf.nest.pack_sequence_as(grads, out)

    def _hvd_is_local(self, source):
        return any(source is v for v in self._hvd_local_sources)

    def register_local_source(self, source):
        """Keeps this variable's gradient local (not averaged across ranks)."""
        self._hvd_local_sources.append(source)

    def get_local_and_global_gradients(self, target, sources, output_gradients=None):
        """(local, shared): lists of (source, gradient) pairs, the local sources' and the others'."""
        grads = tf.nest.flatten(self.gradient(target, sources, output_gradients))
        pairs = list(zip(tf.nest.flatten(sources), grads))
        local = [(s, g) for s, g in pairs if self._hvd_is_local(s)]
        shared = [(s, g) for s, g in pairs if not self._hvd_is_local(s)]
        return local, shared


def DistributedGradientTape(gradtape, device_dense="", device_sparse="", compression=Compression.none,
                            sparse_as_dense=False, op=_ops.Average, gradient_predivide_factor=1.0, num_groups=0,
                            groups=None, process_set=process_sets.global_process_set, scale_local_gradients=True):
    """gradtape, whose gradient() averages across ranks. num_groups and
    groups are accepted: matex's engine fuses gradients by size on its own."""
    if not runtime.started:
        raise ValueError("Horovod has not been initialized; use hvd.init() (served by matex; DistributedGradientTape)")
    averager = GradientAverager("tensorflow.DistributedGradientTape", compression, sparse_as_dense, op,
                                gradient_predivide_factor, process_set)
    cls = type(gradtape.__class__.__name__, (_DistributedTapeMixin, gradtape.__class__), {"__module__": __name__})
    tape = object.__new__(cls)
    tape.__dict__.update(gradtape.__dict__)
    tape._hvd_averager = averager
    tape._hvd_local_sources = []
    tape._hvd_scale_local = scale_local_gradients
    return tape
