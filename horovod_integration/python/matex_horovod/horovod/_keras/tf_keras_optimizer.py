"""The DistributedOptimizer for tf_keras (Keras 2, TF_USE_LEGACY_KERAS=1)
optimizers: tf_keras.optimizers.Optimizer and the legacy OptimizerV2, and so
the tf.optimizers.* and tf.keras.optimizers.* names as TensorFlow resolves
them under TF_USE_LEGACY_KERAS=1.

As in Horovod, the gradients are reduced where tf_keras computes them:
compute_gradients / _compute_gradients (what minimize(), and so Model.fit,
calls) and get_gradients. A custom loop that computes gradients with its own
tape and calls apply_gradients() reduces nothing here; it uses
hvd.DistributedGradientTape. With backward_passes_per_step > 1, each rank
sums N passes and the sum is reduced once every N (local_aggregation.py).

The optimizer is of a class made on the fly that derives from the given
optimizer's class, has its name (so a saved model loads without Horovod)
and carries the distribution settings on the class: from_config() copies
are distributed alike.
"""
from ..tensorflow.gradients import variable_key
from .local_aggregation import LocalGradientAggregation


class Settings:
    def __init__(self, averager, passes, average_aggregated_gradients, scale_local_gradients):
        self.averager = averager
        self.passes = passes
        self.average_aggregated_gradients = average_aggregated_gradients
        self.scale_local_gradients = scale_local_gradients


class DistributedTfKerasMixin:
    _hvd_settings = None  # a Settings, on the class made by distributed_class()

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        settings = type(self)._hvd_settings
        self._hvd_local_keys = set()
        self.process_set = settings.averager.process_set
        self._agg_helper = None
        if settings.passes > 1:
            self._agg_helper = LocalGradientAggregation(settings.passes, self._hvd_reduce_now,
                                                        settings.average_aggregated_gradients)

    def register_local_var(self, var):
        """Keeps var's gradient on this rank (divided by the number of ranks
        when scale_local_gradients is on), as Horovod does."""
        self._hvd_local_keys.add(variable_key(var))

    def _hvd_reduce_now(self, grads, variables):
        settings = type(self)._hvd_settings
        return settings.averager.reduce_except_local(grads, variables, self._hvd_local_keys,
                                                     settings.scale_local_gradients)

    def _hvd_reduce(self, grads, variables):
        grads, variables = list(grads), list(variables)
        if self._agg_helper is not None:
            return self._agg_helper.compute(grads, variables)
        return self._hvd_reduce_now(grads, variables)

    def compute_gradients(self, loss, var_list, tape=None):
        return self._compute_gradients(loss, var_list, None, tape)

    def _compute_gradients(self, loss, var_list, grad_loss=None, tape=None):
        base = super(DistributedTfKerasMixin, self)
        if hasattr(base, "_compute_gradients"):  # the legacy OptimizerV2
            pairs = base._compute_gradients(loss, var_list, grad_loss=grad_loss, tape=tape)
        else:
            if grad_loss is not None:
                raise ValueError("horovod DistributedOptimizer: grad_loss is not taken by this tf_keras optimizer "
                                 f"({type(self).__name__}); use a legacy optimizer for grad_loss")
            pairs = base.compute_gradients(loss, var_list, tape=tape)
        pairs = list(pairs)
        if not pairs:
            return pairs
        grads, variables = zip(*pairs)
        return list(zip(self._hvd_reduce(grads, variables), variables))

    def get_gradients(self, loss, params):
        grads = super().get_gradients(loss, params)
        return self._hvd_reduce(grads, params)

    def apply_gradients(self, grads_and_vars, *args, **kwargs):
        if self._agg_helper is None:
            return super().apply_gradients(grads_and_vars, *args, **kwargs)
        pairs = list(grads_and_vars)
        base = super(DistributedTfKerasMixin, self)
        return self._agg_helper.apply(lambda: base.apply_gradients(pairs, *args, **kwargs), self)


def is_tf_keras_optimizer(optimizer):
    """Whether optimizer is a tf_keras one (new or legacy), without importing tf_keras needlessly."""
    import sys
    if "tf_keras" not in sys.modules:
        return False
    from tf_keras.src.optimizers import optimizer as new_optimizer
    from tf_keras.src.optimizers.legacy import optimizer_v2
    return isinstance(optimizer, (new_optimizer.Optimizer, optimizer_v2.OptimizerV2))


def distributed_class(optimizer_class, settings):
    """A class deriving from optimizer_class, of the same name and module, whose instances reduce gradients."""
    return type(optimizer_class.__name__, (DistributedTfKerasMixin, optimizer_class),
                {"__module__": optimizer_class.__module__, "_hvd_settings": settings})


def create(optimizer, name, settings):
    if isinstance(optimizer, DistributedTfKerasMixin):
        raise ValueError("horovod DistributedOptimizer: the optimizer is distributed already")
    config = optimizer.get_config()
    if name is not None:
        config["name"] = name
    return distributed_class(optimizer.__class__, settings).from_config(config)
