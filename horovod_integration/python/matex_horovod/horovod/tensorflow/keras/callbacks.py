"""horovod.tensorflow.keras.callbacks (served by matex; horovod/_keras/callbacks.py),
on tf.keras's Callback: Keras 3's, or tf_keras's under TF_USE_LEGACY_KERAS=1."""
import tensorflow as _tf

from ..._keras.callbacks import for_base as _for_base

globals().update(_for_base(_tf.keras.callbacks.Callback))
__all__ = ["BroadcastGlobalVariablesCallback", "LearningRateScheduleCallback", "LearningRateWarmupCallback",
           "MetricAverageCallback"]
