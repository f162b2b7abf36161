"""The Keras DistributedOptimizer that horovod.tensorflow.keras and
horovod.keras serve: Keras 3 optimizers here, tf_keras ones in
tf_keras_optimizer.py.

It is an optimizer of the wrapped one's own class (rebuilt from its config)
whose apply() first averages the gradients across ranks, before clipping and
weight decay. Under a loss-scale optimizer (Keras 3 wraps the optimizer in
one for mixed_float16), the averaging comes after the unscaling, and the
finiteness check is made the same on every rank (_agree_on_finiteness). With
backward_passes_per_step=N it turns on Keras's own gradient accumulation
(gradient_accumulation_steps=N): every pass's gradients are averaged across
ranks and Keras applies their mean every N passes; Horovod's default
average_aggregated_gradients=False (the sum of the N passes) multiplies that
mean by N. The result equals Horovod's to rounding; the traffic is N
allreduces per update rather than one.
"""
from ..common import reduce_ops as _ops
from ..tensorflow.gradients import variable_key


def _agree_on_finiteness(original):
    """LossScaleOptimizer.check_finite, for a loss-scale optimizer around a
    distributed one (Keras 3's compile() wraps the optimizer so under the
    mixed_float16 policy): the gradients count as finite only where they are
    on every rank, so that every rank takes the same branch and the inner
    apply() (with its allreduce) runs on all ranks or on none."""
    def check_finite(self, grads):
        finite = original(self, grads)
        if not isinstance(getattr(self, "inner_optimizer", None), _DistributedKerasMixin):
            return finite
        import tensorflow as tf

        from ..tensorflow import mpi_ops
        everywhere = mpi_ops.allreduce(tf.cast(finite, tf.int32), op=_ops.Min, name="horovod.loss_scale.finite")
        return tf.cast(everywhere, tf.bool)
    return check_finite


class _DistributedKerasMixin:
    _hvd_settings = None  # (averager, postscale, scale_local_gradients), on the class

    def register_local_var(self, var):
        """Keeps var's gradient on this rank (divided by the number of ranks
        when scale_local_gradients is on), as Horovod does."""
        if not hasattr(self, "_hvd_local_keys"):
            self._hvd_local_keys = set()
        self._hvd_local_keys.add(variable_key(var))

    def apply(self, grads, trainable_variables=None):
        averager, postscale, scale_local = type(self)._hvd_settings
        local = getattr(self, "_hvd_local_keys", None)
        variables = trainable_variables if trainable_variables is not None else self._trainable_variables
        grads = averager.reduce_except_local(list(grads), list(variables), local, scale_local, postscale)
        return super().apply(grads, trainable_variables)


def _is_keras3_optimizer(optimizer):
    import sys
    return "keras" in sys.modules and isinstance(optimizer, sys.modules["keras"].optimizers.Optimizer)


def create_distributed_optimizer(optimizer, name, compression, sparse_as_dense, gradient_predivide_factor, op,
                                 backward_passes_per_step, average_aggregated_gradients, process_set,
                                 scale_local_gradients=True):
    """optimizer (Keras 3 or tf_keras) made distributed; see this module's and tf_keras_optimizer's notes."""
    from ..tensorflow.gradients import GradientAverager
    from ..tensorflow.runtime import runtime
    from . import tf_keras_optimizer
    if not runtime.started:
        raise ValueError("Horovod has not been initialized; use hvd.init() (served by matex; DistributedOptimizer)")
    keras3 = _is_keras3_optimizer(optimizer)
    if not keras3 and not tf_keras_optimizer.is_tf_keras_optimizer(optimizer):
        raise TypeError(f"horovod DistributedOptimizer: expected a Keras 3 or tf_keras optimizer (or a TF1 "
                        f"tf.compat.v1.train.Optimizer), got {type(optimizer).__name__}")
    averager = GradientAverager("keras.DistributedOptimizer", compression, sparse_as_dense, op,
                                gradient_predivide_factor, process_set, allowed_ops=(_ops.Average, _ops.Sum))
    passes = int(backward_passes_per_step)
    if passes < 1:
        raise ValueError(f"horovod DistributedOptimizer: backward_passes_per_step must be >= 1, not {passes}")
    if not keras3:
        settings = tf_keras_optimizer.Settings(averager, passes, average_aggregated_gradients, scale_local_gradients)
        return tf_keras_optimizer.create(optimizer, name, settings)
    if isinstance(optimizer, _DistributedKerasMixin):
        raise ValueError("horovod DistributedOptimizer: the optimizer is distributed already")
    import keras
    from matex import _patching
    _patching.patch(keras.optimizers.LossScaleOptimizer, "check_finite", _agree_on_finiteness)
    config = optimizer.get_config()
    if passes > 1:
        if config.get("gradient_accumulation_steps"):
            raise ValueError("horovod DistributedOptimizer: give backward_passes_per_step or the optimizer's "
                             "gradient_accumulation_steps, not both")
        config["gradient_accumulation_steps"] = passes
    if name is not None:
        config["name"] = name
    postscale = float(passes) if passes > 1 and not average_aggregated_gradients else 1.0
    cls = type(optimizer.__class__.__name__, (_DistributedKerasMixin, optimizer.__class__),
               {"__module__": optimizer.__class__.__module__,
                "_hvd_settings": (averager, postscale, scale_local_gradients)})
    return cls.from_config(config)
