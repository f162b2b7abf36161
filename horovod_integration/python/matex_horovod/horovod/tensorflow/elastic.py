"""horovod.tensorflow.elastic on a job of fixed size (common/elastic.py says
what that serves and what it does not): TensorFlowState for variables,
TensorFlowKerasState for a Keras model and its optimizer (Keras 3 or
tf_keras), and run."""
import tensorflow as tf

from ..common.elastic import ObjectState, State, run_fn  # noqa: F401  (Horovod's names)
from .functions import broadcast_variables
from .mpi_ops import broadcast_object
from .runtime import runtime


def _rank():
    return runtime.rank


def run(func):
    """func(state, ...) after state.sync(), on this job's fixed ranks."""
    return run_fn(func)


def _values(variables):
    return [tf.convert_to_tensor(v).numpy() for v in variables]


class TensorFlowState(ObjectState):
    """variables (tf.Variables) and keyword values: save() copies them to host
    memory, restore() assigns the copies back, sync() gives every rank rank
    0's and saves."""

    def __init__(self, variables=None, **kwargs):
        if variables is None:
            if tf.executing_eagerly():
                raise ValueError("horovod.tensorflow.elastic.TensorFlowState: pass the variables to track "
                                 "(TensorFlow 2 has no global variable collection)")
            variables = tf.compat.v1.global_variables()
        self.variables = list(variables)
        self._saved_values = _values(self.variables)
        super().__init__(broadcast_object, _rank, **kwargs)

    def save(self):
        self._saved_values = _values(self.variables)
        super().save()

    def restore(self):
        for variable, value in zip(self.variables, self._saved_values):
            variable.assign(value)
        super().restore()

    def sync(self):
        if self.variables:
            broadcast_variables(self.variables, root_rank=0)
        self._saved_values = _values(self.variables)
        super().sync()


class TensorFlowKerasState(ObjectState):
    """A Keras model, its optimizer (the model's by default) and keyword
    values, kept as TensorFlowState keeps variables. The optimizer's
    variables are those it has when each call is made: it may build them
    after the state is made; restore() puts back those it had at the last
    save and leaves any it made since as they are."""

    def __init__(self, model, optimizer=None, backend=None, **kwargs):
        self.model = model
        self.optimizer = optimizer if optimizer is not None else getattr(model, "optimizer", None)
        self._saved_model = _values(self.model.variables)
        self._saved_optimizer = _values(self._optimizer_variables())
        super().__init__(broadcast_object, _rank, **kwargs)

    def _optimizer_variables(self):
        from .._keras.callbacks import optimizer_variables
        return optimizer_variables(self.optimizer)

    def save(self):
        self._saved_model = _values(self.model.variables)
        self._saved_optimizer = _values(self._optimizer_variables())
        super().save()

    def restore(self):
        for variable, value in zip(self.model.variables, self._saved_model):
            variable.assign(value)
        for variable, value in zip(self._optimizer_variables(), self._saved_optimizer):
            variable.assign(value)
        super().restore()

    def sync(self):
        broadcast_variables(self.model.variables, root_rank=0)
        optimizer_variables = self._optimizer_variables()
        if optimizer_variables:
            broadcast_variables(optimizer_variables, root_rank=0)
        self._saved_model = _values(self.model.variables)
        self._saved_optimizer = _values(optimizer_variables)
        super().sync()
