"""Registering "matex" with torch.distributed and creating one backend per
process group (only on its members: c10d calls the creator there alone)."""
import threading

import torch.distributed as dist

from . import _launcher, _native

_lock = threading.Lock()
_registered = False


def _create(options, backend_options=None):
    world_rank, world_size = _native.extension().world()
    _launcher.check_world(options.group_rank, options.group_size, world_rank, world_size,
                          list(options.global_ranks_in_group))
    timeout = options.timeout.total_seconds() if hasattr(options.timeout, "total_seconds") else float(options.timeout)
    return _native.extension().create_backend(
        options.group_rank, options.group_size, list(options.global_ranks_in_group), timeout,
        str(options.group_id) or "default")


def register():
    """Registers the backend "matex" for CPU and CUDA tensors (idempotent).
    Called by torch through the entry point when a script asks for "matex"."""
    global _registered
    with _lock:
        if _registered or "MATEX" in dist.Backend._plugins:
            _registered = True
            return
        # CUDA tensors go through libmatexcomm's device path; a build without
        # CUDA refuses them, saying so. (Asking the library here would load
        # native code at `import torch`, through the entry point.)
        dist.Backend.register_backend("matex", _create, extended_api=True, devices=["cpu", "cuda"])
        _registered = True


def is_registered():
    return _registered


def shutdown():
    """Closes every matex process group, then MPI (at exit, automatically).
    Collective: every rank must reach it."""
    if _native._module is not None:
        _native._module.shutdown()
