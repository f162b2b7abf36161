"""Horovod's Keras callbacks, on Keras 3 (TensorFlow backend) and on tf_keras.

The behaviour is written once, in base-less classes; for_base(Callback)
gives the classes on one Keras's Callback (a fit of either Keras calls only
its own kind): horovod.keras's on Keras 3, horovod.tensorflow.keras's on
tf.keras, which is tf_keras under TF_USE_LEGACY_KERAS=1.

BroadcastGlobalVariablesCallback: root_rank's model variables are
broadcast when training begins (Horovod did it after the first batch, which
let the ranks' first steps start from different weights) and the
optimizer's as soon as they exist. MetricAverageCallback: every figure in
the epoch's logs averaged across ranks. LearningRateScheduleCallback and
LearningRateWarmupCallback: Horovod's schedules, with momentum correction
done by scaling the optimizer's momentum buffers by new_lr / old_lr when the
rate changes (Keras 3 bakes the momentum coefficient into the traced step,
so it cannot be changed for one batch as Horovod did; for SGD without
Nesterov and for RMSprop the two are the same update). As in Horovod, only
optimizers with a momentum hyperparameter are corrected: not Adam's family.
"""
import tensorflow as tf

from ..common.refusals import refuse
from ..tensorflow import mpi_ops
from ..tensorflow.runtime import runtime
from .callback_classes import made_on


def _variables_of(optimizer):
    variables = optimizer.variables
    if callable(variables) and not isinstance(variables, list):  # tf_keras's legacy OptimizerV2
        variables = variables()
    return list(variables)


def optimizer_variables(optimizer):
    """The optimizer's variables (a loss-scale optimizer's inner one's when it has none of its own)."""
    if optimizer is None:
        return []
    inner = getattr(optimizer, "inner_optimizer", None)  # LossScaleOptimizer
    variables = _variables_of(optimizer)
    if inner is not None and not variables:
        variables = _variables_of(inner)
    return variables


def _number(value):
    """A learning rate or momentum (a float, a tf.Variable, a Keras 3 variable) as a float."""
    return float(tf.convert_to_tensor(value).numpy())


class _BroadcastGlobalVariables:
    def __init__(self, root_rank, device="", local_variables=None):
        super().__init__()
        self.root_rank = root_rank
        self.local_variables = [] if local_variables is None else list(local_variables)
        self._model_done = False
        self._optimizer_done = False

    def _broadcast(self, variables):
        variables = [v for v in variables if not any(v is local for local in self.local_variables)]
        for v in variables:
            v.assign(mpi_ops.broadcast(tf.convert_to_tensor(v), self.root_rank))

    def _sync(self):
        if not self._model_done:
            self._broadcast(self.model.variables)
            self._model_done = True
        if not self._optimizer_done:
            variables = optimizer_variables(getattr(self.model, "optimizer", None))
            if variables:
                self._broadcast(variables)
                self._optimizer_done = True

    def on_train_begin(self, logs=None):
        self._sync()

    def on_batch_end(self, batch, logs=None):
        if not self._optimizer_done:
            self._sync()


class _MetricAverage:
    """Replaces each figure of the epoch's logs by its average across ranks."""

    def __init__(self, device=""):
        super().__init__()

    def on_epoch_end(self, epoch, logs=None):
        if not logs:
            return
        names = sorted(k for k, v in logs.items() if isinstance(v, (int, float)) or hasattr(v, "dtype"))
        values = [tf.cast(tf.convert_to_tensor(logs[k]), tf.float64) for k in names]
        averaged = mpi_ops.grouped_allreduce(values, op=mpi_ops.Average, name=f"horovod.metric_average.{epoch}")
        for k, v in zip(names, averaged):
            logs[k] = float(v.numpy())


def _momentum_buffers(optimizer):
    """The momentum buffers that Horovod's correction scales: those of an
    optimizer with a momentum hyperparameter (SGD's `momentums`, RMSprop's
    `_momentums`; the legacy tf_keras optimizers' "momentum" slots). Adam's
    family keeps its first moments in `_momentums` too, but has no momentum
    coefficient, and Horovod leaves it alone."""
    inner = getattr(optimizer, "inner_optimizer", optimizer)
    if not hasattr(inner, "momentum") or not _number(inner.momentum):
        return inner, []
    slots = getattr(inner, "_slots", None)
    if isinstance(slots, dict):  # the legacy tf_keras OptimizerV2
        return inner, [per_variable["momentum"] for per_variable in slots.values() if "momentum" in per_variable]
    for attribute in ("momentums", "_momentums"):
        buffers = getattr(inner, attribute, None)
        if buffers:
            return inner, list(buffers)
    return inner, []


class _LearningRateSchedule:
    """lr = initial_lr * multiplier(epoch) for start_epoch <= epoch < end_epoch;
    with staircase=False the epoch is fractional (epoch + batch / steps_per_epoch)."""

    def __init__(self, initial_lr, multiplier, start_epoch=0, end_epoch=None, staircase=True,
                 momentum_correction=True, steps_per_epoch=None):
        super().__init__()
        if initial_lr is None:
            raise ValueError("horovod LearningRateScheduleCallback: initial_lr is required (the learning rate "
                             "the schedule scales)")
        self.initial_lr = initial_lr
        self.start_epoch = start_epoch
        self.end_epoch = end_epoch
        self.staircase = staircase
        self.momentum_correction = momentum_correction
        self.steps_per_epoch = steps_per_epoch
        self.current_epoch = None
        if callable(multiplier):
            self.multiplier = multiplier
        else:
            self.multiplier = lambda epoch: multiplier ** (epoch - start_epoch)

    def _optimizer(self):
        return self.model.optimizer

    def _lr(self):
        return _number(self._optimizer().learning_rate)

    def _set_lr(self, lr):
        optimizer = self._optimizer()
        old = self._lr()
        if self.momentum_correction and old > 0 and lr != old:
            inner, buffers = _momentum_buffers(optimizer)
            if getattr(inner, "nesterov", False):
                refuse("momentum_correction with Nesterov momentum",
                       "Keras 3 fixes the momentum coefficient when it traces the step; pass "
                       "momentum_correction=False")
            for buffer in buffers:
                buffer.assign(buffer * (lr / old))
        optimizer.learning_rate = lr

    def on_train_begin(self, logs=None):
        if not self.staircase and not self.steps_per_epoch:
            steps = (self.params or {}).get("steps")
            if not steps:
                raise ValueError("horovod LearningRateScheduleCallback: steps_per_epoch is unknown (the input has "
                                 "no length); pass steps_per_epoch")
            self.steps_per_epoch = steps

    def on_epoch_begin(self, epoch, logs=None):
        self.current_epoch = epoch

    def on_batch_begin(self, batch, logs=None):
        end = self.end_epoch
        if self.current_epoch < self.start_epoch or (end is not None and self.current_epoch >= end):
            return
        if self.staircase and batch == 0:
            self._set_lr(self.initial_lr * self.multiplier(self.current_epoch))
        elif not self.staircase:
            epoch = self.current_epoch + float(batch) / self.steps_per_epoch
            self._set_lr(self.initial_lr * self.multiplier(epoch))

    def on_epoch_end(self, epoch, logs=None):
        if logs is not None:
            logs["lr"] = self._lr()


class _LearningRateWarmup(_LearningRateSchedule):
    """Ramps the rate from initial_lr / size to initial_lr over warmup_epochs
    (fractional epochs, every batch), as Horovod's does."""

    def __init__(self, initial_lr, warmup_epochs=5, momentum_correction=True, steps_per_epoch=None, verbose=0):
        def multiplier(epoch):
            epoch += 1.0 / self.steps_per_epoch
            size = runtime.size
            return 1.0 / size * (epoch * (size - 1) / warmup_epochs + 1)

        super().__init__(initial_lr, multiplier, start_epoch=0, end_epoch=warmup_epochs, staircase=False,
                         momentum_correction=momentum_correction, steps_per_epoch=steps_per_epoch)
        self.warmup_epochs = warmup_epochs
        self.verbose = verbose

    def on_epoch_end(self, epoch, logs=None):
        super().on_epoch_end(epoch, logs)
        if epoch == self.warmup_epochs - 1 and self.verbose > 0 and runtime.rank == 0:
            print(f"\nEpoch {epoch + 1}: finished gradual learning rate warmup to {self._lr():g}.")


def for_base(callback_base):
    """The four callbacks as subclasses of callback_base (a Keras's Callback)."""
    return made_on(callback_base, (("BroadcastGlobalVariablesCallback", _BroadcastGlobalVariables),
                                   ("MetricAverageCallback", _MetricAverage),
                                   ("LearningRateScheduleCallback", _LearningRateSchedule),
                                   ("LearningRateWarmupCallback", _LearningRateWarmup)), __name__)
