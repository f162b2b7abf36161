"""matex_torch: the torch.distributed backend "matex" over libmatexcomm.

Collectives on CPU tensors run on libmatexcomm's topology-aware algorithms:
shared memory between the ranks of a node, MPI across nodes. Launch with
mpirun or srun; rank, world size and the rendezvous come from the launcher:

    mpirun -np 4 python train.py      # train.py: dist.init_process_group("matex")

Installing the package registers the backend through torch's entry points, so
`init_process_group("matex")` needs no import of this module. With
MATEX_ENABLE=1 an existing script's "gloo" (or default) process group runs on
matex instead (docs/pytorch.md).

This module imports nothing at the top: torch's start-up hook
(matex_torch._autoload) is imported through it while torch itself loads.
"""

__all__ = ["register", "is_registered", "shutdown"]


def register():
    """Registers the backend "matex" for CPU tensors (idempotent)."""
    from . import _backend
    _backend.register()


def is_registered():
    from . import _backend
    return _backend.is_registered()


def shutdown():
    """Closes every matex process group, then MPI (done at exit anyway).
    Collective: every rank must call it."""
    from . import _backend
    _backend.shutdown()
