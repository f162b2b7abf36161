"""horovod.keras.callbacks (served by matex; horovod/_keras/callbacks.py)."""
from .._keras.callbacks import (BroadcastGlobalVariablesCallback, LearningRateScheduleCallback,  # noqa: F401
                                LearningRateWarmupCallback, MetricAverageCallback)
