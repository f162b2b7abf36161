"""horovod.keras, served by matex: on Keras 3 it is horovod.tensorflow.keras
(Keras 3 on the TensorFlow backend)."""
from ..tensorflow.keras import *  # noqa: F401,F403
from ..tensorflow.keras import (DistributedOptimizer, allgather, allreduce, broadcast,  # noqa: F401
                                broadcast_global_variables, load_model, reducescatter)
from . import callbacks, elastic  # noqa: F401
