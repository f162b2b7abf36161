"""horovod.keras.elastic on a job of fixed size (common/elastic.py says what
that serves): KerasState, the elastic callbacks on the keras package's
Callback (Keras 3), and run."""
import keras as _keras

from .._keras.elastic import for_base as _for_base
from ..tensorflow.keras.elastic import KerasState, run  # noqa: F401

globals().update(_for_base(_keras.callbacks.Callback))
