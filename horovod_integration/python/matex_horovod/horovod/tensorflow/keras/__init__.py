"""horovod.tensorflow.keras, served by matex for tf.keras: Keras 3 on
TensorFlow, or tf_keras under TF_USE_LEGACY_KERAS=1 (DistributedOptimizer
takes either kind of optimizer): `import horovod.tensorflow.keras as hvd`
(docs/horovod.md)."""
import numpy as _np
import tensorflow as _tf

from ... import _keras as _impl
from ...common import process_sets as _process_sets
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
    """optimizer (Keras 3 or tf_keras), rebuilt so that the gradients are
    averaged across ranks (_keras/). num_groups and groups are accepted: the
    engine fuses by size."""
    return _impl.create_distributed_optimizer(optimizer, name, compression, sparse_as_dense,
                                              gradient_predivide_factor, op, backward_passes_per_step,
                                              average_aggregated_gradients, process_set, scale_local_gradients)


def PartialDistributedOptimizer(optimizer, name=None, device_dense="", device_sparse="", compression=Compression.none,
                                sparse_as_dense=False, gradient_predivide_factor=1.0, op=Average,
                                backward_passes_per_step=1, average_aggregated_gradients=False, groups=None,
                                process_set=_process_sets.global_process_set, local_layers=None,
                                scale_local_gradients=True):
    """A DistributedOptimizer that keeps the gradients of local_layers' trainable weights on each rank."""
    optimizer = DistributedOptimizer(optimizer, name, device_dense, device_sparse, compression, sparse_as_dense,
                                     gradient_predivide_factor, op, backward_passes_per_step,
                                     average_aggregated_gradients, groups=groups, process_set=process_set,
                                     scale_local_gradients=scale_local_gradients)
    layers = [] if local_layers is None else (list(local_layers) if isinstance(local_layers, (list, tuple, set))
                                              else [local_layers])
    for layer in layers:
        for weight in layer.trainable_weights:
            optimizer.register_local_var(weight)
    return optimizer


def _tensor(value):
    """value as a tensor, as Horovod's Keras calls take it (tf.constant of a value)."""
    return value if _tf.is_tensor(value) else _tf.constant(_np.asarray(value))


def allreduce(value, name=None, average=None, prescale_factor=1.0, postscale_factor=1.0, op=None,
              compression=Compression.none):
    """value (a tensor, a NumPy array or a number) reduced across ranks; a tensor, as Horovod returns eagerly."""
    return _mpi_ops.allreduce(_tensor(value), average=average, prescale_factor=prescale_factor,
                              postscale_factor=postscale_factor, op=op, compression=compression, name=name)


def allgather(value, name=None):
    return _mpi_ops.allgather(_tensor(value), name=name)


def broadcast(value, root_rank, name=None):
    return _mpi_ops.broadcast(_tensor(value), root_rank, name=name)


def reducescatter(value, name=None, op=Average):
    return _mpi_ops.reducescatter(_tensor(value), name=name, op=op)


def _tf_keras_is_tf_keras():
    return _tf.keras.callbacks.Callback.__module__.startswith("tf_keras")


def _load_tf_keras_model(filepath, custom_optimizers, custom_objects, compression, legacy_opts):
    """tf.keras.models.load_model with every tf_keras optimizer class (and
    custom_optimizers) standing for its distributed subclass, so that the
    loaded optimizer, state included, is distributed (Horovod's way)."""
    import tf_keras
    from ..._keras import tf_keras_optimizer
    from ..gradients import GradientAverager
    settings = tf_keras_optimizer.Settings(GradientAverager("keras.load_model", compression), 1, False, True)
    base = tf_keras.optimizers.legacy.Optimizer if legacy_opts else tf_keras.optimizers.Optimizer
    objects = {}
    for optimizer_class in base.__subclasses__() + list(custom_optimizers or []):
        distributed = tf_keras_optimizer.distributed_class(optimizer_class, settings)
        objects[optimizer_class.__name__] = objects[optimizer_class.__name__.lower()] = distributed
    objects.update(custom_objects or {})
    return _tf.keras.models.load_model(filepath, custom_objects=objects)


def load_model(filepath, custom_optimizers=None, custom_objects=None, compression=Compression.none,
               legacy_opts=False):
    """keras.models.load_model, with the saved model's optimizer (and its
    state) wrapped in DistributedOptimizer."""
    if _tf_keras_is_tf_keras():
        return _load_tf_keras_model(filepath, custom_optimizers, custom_objects, compression, legacy_opts)
    import keras as _keras_module
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


from . import elastic  # noqa: E402,F401  (on a job of fixed size: common/elastic.py)
