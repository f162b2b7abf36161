"""matex: MPI data parallelism for TensorFlow, backed by libmatexcomm.

    import matex
    matex.init()                        # under mpirun / srun
    g = matex.allreduce(g)              # averaged across ranks
    w = matex.broadcast(w, root_rank=0)
    rows = matex.allgather(x)           # first dimensions may differ

The collectives are TensorFlow ops (eager and tf.function) that run in
libmatexcomm's asynchronous engine (docs/engine.md).
"""
from ._runtime import init, is_initialized, rank, shutdown, size

__all__ = ["init", "shutdown", "is_initialized", "rank", "size", "allreduce", "broadcast", "allgather"]


def __getattr__(name):
    # The collectives import TensorFlow; keep `import matex` itself light.
    if name in ("allreduce", "broadcast", "allgather"):
        from . import _collectives
        return getattr(_collectives, name)
    raise AttributeError(f"module 'matex' has no attribute {name!r}")
