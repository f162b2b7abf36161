"""horovod.tensorflow, served by matex: `import horovod.tensorflow as hvd`
as in any Horovod script (docs/horovod.md). The collectives are matex's
TensorFlow ops (eager and in tf.function), run by libmatexcomm's engine."""
from ..common.basics import Basics as _Basics
from ..common.exceptions import HorovodInternalError, HostsUpdatedInterrupt  # noqa: F401
from ..common.refusals import not_served as _not_served
from .compression import Compression  # noqa: F401
from .functions import (BroadcastGlobalVariablesHook, DistributedOptimizer,  # noqa: F401
                        broadcast_global_variables, broadcast_variables)
from .gradient_tape import DistributedGradientTape  # noqa: F401
from .mpi_ops import (Adasum, Average, Max, Min, Product, Sum, allgather, allgather_object, allreduce,  # noqa: F401
                      alltoall, barrier, broadcast, broadcast_, broadcast_object, grouped_allgather,
                      grouped_allreduce, grouped_reducescatter, join, local_rank_op, local_size_op,
                      process_set_included_op, rank_op, reducescatter, size_op)
from .runtime import runtime as _runtime
from .util import _executing_eagerly  # noqa: F401  (Horovod has it here; its tests call it)

_basics = _Basics(_runtime, "tensorflow")
globals().update(_basics.exported())


def PartialDistributedGradientTape(gradtape, device_dense="", device_sparse="", compression=Compression.none,
                                   sparse_as_dense=False, op=Average, gradient_predivide_factor=1.0, num_groups=0,
                                   groups=None, process_set=None, local_layers=None, scale_local_gradients=True):
    """A DistributedGradientTape that keeps the gradients of local_layers' weights local."""
    from ..common import process_sets
    tape = DistributedGradientTape(gradtape, device_dense, device_sparse, compression, sparse_as_dense, op,
                                   gradient_predivide_factor, num_groups, groups,
                                   process_set or process_sets.global_process_set, scale_local_gradients)
    layers = [] if local_layers is None else (local_layers if isinstance(local_layers, (list, tuple))
                                              else [local_layers])
    for layer in layers:
        for weight in layer.trainable_weights:
            tape.register_local_source(weight)
    return tape


broadcast_object_fn = _not_served("horovod.tensorflow.broadcast_object_fn",
                                  "TF1 sessions' object broadcast; call hvd.broadcast_object eagerly")

from . import elastic  # noqa: E402,F401  (on a job of fixed size: common/elastic.py)


def __getattr__(name):
    # Made on first use, so that `import horovod.tensorflow` does not import Keras.
    if name == "SyncBatchNormalization":
        from .sync_batch_norm import made
        return made()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
