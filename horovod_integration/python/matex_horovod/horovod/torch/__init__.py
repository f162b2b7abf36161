"""horovod.torch, served by matex: `import horovod.torch as hvd` as in any
Horovod script (docs/horovod.md). Collectives run in libmatexcomm's engine;
CPU tensors in place, CUDA tensors staged through host memory."""
from ..common.basics import Basics as _Basics
from ..common.engine import engine as _engine
from ..common.exceptions import HorovodInternalError, HostsUpdatedInterrupt  # noqa: F401
from ..common.refusals import NotServedModule as _NotServedModule
from ..common.refusals import not_served as _not_served
from .compression import Compression  # noqa: F401
from .functions import broadcast_optimizer_state, broadcast_parameters  # noqa: F401
from .mpi_ops import (Adasum, Average, Max, Min, Product, Sum, allgather, allgather_async,  # noqa: F401
                      allgather_object, allreduce, allreduce_, allreduce_async, allreduce_async_, alltoall,
                      alltoall_async, barrier, broadcast, broadcast_, broadcast_async, broadcast_async_,
                      broadcast_object, grouped_allgather, grouped_allreduce, grouped_allreduce_,
                      grouped_allreduce_async, grouped_allreduce_async_, grouped_reducescatter, join, poll,
                      reducescatter, reducescatter_async, sparse_allreduce_async, synchronize)
from .optimizer import DistributedOptimizer  # noqa: F401
from .sync_batch_norm import SyncBatchNorm  # noqa: F401

_basics = _Basics(_engine, "torch")
globals().update(_basics.exported())

elastic = _NotServedModule("horovod.torch.elastic", "elastic training is not served")
run = _not_served("horovod.torch.run", "elastic and programmatic launch are not served; start the job with "
                  "horovodrun or mpirun")
