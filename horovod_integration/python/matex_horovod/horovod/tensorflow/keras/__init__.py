"""horovod.tensorflow.keras, served by matex for Keras 3 on TensorFlow:
`import horovod.tensorflow.keras as hvd` (docs/horovod.md)."""
import keras as _keras_module
import numpy as _np

from ... import _keras as _impl
from ...common import process_sets as _process_sets
from ...common.refusals import NotServedModule as _NotServedModule
from ...common import reduce_ops as _ops
from .. import _basics, broadcast_global_variables  # noqa: F401
from ..mpi_ops import allgather_object, barrier, broadcast_object, join  # noqa: F401
from .. import mpi_ops as _mpi_ops
from ..compression import Compression
from . import callbacks  # noqa: F401

globals().update(_basics.exported())
Average, Sum, Adasum = _ops.Average, _ops.Sum, _ops.Adasum


def DistributedOptimizer(optimizer, name=None, device_dense="", device_sparse="", compression=Compression.none,
                         sparse_as_dense=False, gradient_predivide_factor=1.0, op=Average,
                         backward_passes_per_step=1, average_aggregated_gradients=False, num_groups=0,
                         groups=None, process_set=_process_sets.global_process_set, scale_local_gradients=True):
    """optimizer, rebuilt so that apply() averages the gradients across ranks
    first. num_groups and groups are accepted: the engine fuses by size."""
    return _impl.create_distributed_optimizer(optimizer, name, compression, sparse_as_dense,
                                              gradient_predivide_factor, op, backward_passes_per_step,
                                              average_aggregated_gradients, process_set)


def _numpy(value):
    return _np.asarray(value.numpy() if hasattr(value, "numpy") else value)


def allreduce(value, name=None, average=None, prescale_factor=1.0, postscale_factor=1.0, op=None,
              compression=Compression.none):
    """value (a NumPy array or a number) reduced across ranks, as NumPy."""
    return _numpy(_mpi_ops.allreduce(_np.asarray(value), average=average, prescale_factor=prescale_factor,
                                     postscale_factor=postscale_factor, op=op, compression=compression, name=name))


def allgather(value, name=None):
    return _numpy(_mpi_ops.allgather(_np.asarray(value), name=name))


def broadcast(value, root_rank, name=None):
    return _numpy(_mpi_ops.broadcast(_np.asarray(value), root_rank, name=name))


def reducescatter(value, name=None, op=Average):
    return _numpy(_mpi_ops.reducescatter(_np.asarray(value), name=name, op=op))


def load_model(filepath, custom_optimizers=None, custom_objects=None, compression=Compression.none,
               legacy_opts=False):
    """keras.models.load_model, with the saved model's optimizer (and its
    state) wrapped in DistributedOptimizer."""
    if legacy_opts:
        from ...common.refusals import refuse
        refuse("load_model(legacy_opts=True)", "Keras 3 has no legacy optimizers")
    objects = dict(custom_objects or {})
    for optimizer_class in custom_optimizers or []:
        objects.setdefault(optimizer_class.__name__, optimizer_class)
    model = _keras_module.models.load_model(filepath, custom_objects=objects or None)
    saved = getattr(model, "optimizer", None)
    inner = getattr(saved, "inner_optimizer", saved)  # a LossScaleOptimizer's own optimizer
    if saved is not None and (inner.get_config().get("gradient_accumulation_steps") or 1) > 1:
        from ...common.refusals import refuse
        refuse("load_model of a model whose optimizer accumulates gradients (backward_passes_per_step > 1)",
               "whether the saved job summed or averaged the passes is not saved; load the model with "
               "keras.models.load_model(..., compile=False) and compile it with hvd.DistributedOptimizer("
               "..., backward_passes_per_step=N) again")
    if saved is not None:
        distributed = DistributedOptimizer(saved, compression=compression)
        if saved.built:
            distributed.build(model.trainable_variables)
            for mine, theirs in zip(distributed.variables, saved.variables):
                mine.assign(theirs)
        model.optimizer = distributed
    return model


elastic = _NotServedModule("horovod.tensorflow.keras.elastic", "elastic training is not served")
