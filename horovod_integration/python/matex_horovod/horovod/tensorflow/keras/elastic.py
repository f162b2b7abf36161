"""horovod.tensorflow.keras.elastic on a job of fixed size (common/elastic.py
says what that serves): KerasState, the elastic callbacks on tf.keras's
Callback, and run."""
import tensorflow as _tf

from ..._keras.elastic import for_base as _for_base
from ..elastic import TensorFlowKerasState, run  # noqa: F401

globals().update(_for_base(_tf.keras.callbacks.Callback))


class KerasState(TensorFlowKerasState):
    """A Keras model, its optimizer and keyword values (batch=, epoch=, ...)."""

    def __init__(self, model, optimizer=None, **kwargs):
        super().__init__(model, optimizer=optimizer, **kwargs)
