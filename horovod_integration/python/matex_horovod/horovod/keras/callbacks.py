"""horovod.keras.callbacks (served by matex; horovod/_keras/callbacks.py), on
the keras package's Callback (Keras 3)."""
import keras as _keras

from .._keras.callbacks import for_base as _for_base

globals().update(_for_base(_keras.callbacks.Callback))
__all__ = ["BroadcastGlobalVariablesCallback", "LearningRateScheduleCallback", "LearningRateWarmupCallback",
           "MetricAverageCallback"]
