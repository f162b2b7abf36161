"""Averaging gradients across ranks for horovod.tensorflow: the list
allreduce that DistributedGradientTape, the TF1 DistributedOptimizer and the
Keras DistributedOptimizer share.

Dense gradients go out in one grouped allreduce (the engine fuses them);
tf.IndexedSlices are gathered, unless sparse_as_dense turns them dense first.
A None gradient stays None. gradient_predivide_factor f splits the average:
each rank multiplies by 1/f before the sum and the sum is multiplied by f/N.
Variables registered as local (the optimizers' register_local_var, the
partial optimizers' local layers) keep their own gradient, divided by the
number of ranks when scale_local_gradients is on, as Horovod does.
"""
import tensorflow as tf

from ..common import process_sets
from ..common import reduce_ops as _ops
from . import mpi_ops
from .compression import Compression


class GradientAverager:
    def __init__(self, who, compression=Compression.none, sparse_as_dense=False, op=_ops.Average,
                 gradient_predivide_factor=1.0, process_set=process_sets.global_process_set, allowed_ops=None):
        # A rank outside the optimizer's or tape's process set keeps its own gradients (steps alone), as in Horovod.
        self.outside = (not process_sets.is_global(process_set) and process_set.process_set_id is not None
                        and process_set.included() is False)
        if not self.outside:
            process_sets.check(process_set, who)
        _ops.resolve(op, None, who)
        if allowed_ops is not None and op not in allowed_ops:
            raise ValueError(f"horovod.{who}: op must be Average or Sum")
        if op != _ops.Average and gradient_predivide_factor != 1.0:
            raise ValueError(f"horovod.{who}: gradient_predivide_factor needs op=Average")
        if gradient_predivide_factor <= 0:
            raise ValueError(f"horovod.{who}: gradient_predivide_factor must be > 0")
        self.compression = compression
        self.sparse_as_dense = sparse_as_dense
        self.op = op
        self.predivide = float(gradient_predivide_factor)
        self.process_set = process_set

    def __call__(self, grads, postscale=1.0):
        grads = list(grads)
        present = [i for i, g in enumerate(grads) if g is not None]
        if not present or self.outside:
            return grads
        values = []
        for i in present:
            g = grads[i]
            if self.sparse_as_dense and isinstance(g, tf.IndexedSlices):
                g = tf.convert_to_tensor(g)
            values.append(g)
        prescale, post = ((1.0 / self.predivide, self.predivide) if self.op == _ops.Average else (1.0, 1.0))
        reduced = mpi_ops.grouped_allreduce(values, compression=self.compression, op=self.op,
                                            prescale_factor=prescale, postscale_factor=post * postscale,
                                            process_set=self.process_set)
        result = list(grads)
        for i, value in zip(present, reduced):
            result[i] = value
        return result

    def reduce_except_local(self, grads, variables, local_keys, scale_local=True, postscale=1.0):
        """grads averaged across ranks, except those of variables whose
        variable_key is in local_keys: those stay this rank's own, divided by
        the number of ranks when scale_local is on."""
        grads = list(grads)
        if not local_keys:
            return self(grads, postscale)
        local = [variable_key(v) in local_keys for v in variables]
        shared = self([None if is_local else g for g, is_local in zip(grads, local)], postscale)
        size = self.process_set.size() or mpi_ops.runtime.size
        out = []
        for g, is_local, reduced in zip(grads, local, shared):
            if not is_local:
                out.append(reduced)
            elif g is None or not scale_local:
                out.append(g)
            elif isinstance(g, tf.IndexedSlices):
                out.append(tf.IndexedSlices(g.values / tf.cast(size, g.values.dtype), g.indices, g.dense_shape))
            else:
                out.append(g / tf.cast(size, g.dtype))
        return out


def variable_key(variable):
    """A hashable identity of a variable: tf.Variable.ref(), else the object's id (Keras 3 variables)."""
    return variable.ref() if hasattr(variable, "ref") else id(variable)
