"""Registering "matex" with torch.distributed and creating one backend per
process group (only on its members: c10d calls the creator there alone)."""
import threading

import torch.distributed as dist
import torch.distributed.distributed_c10d as distributed_c10d

from . import _launcher, _native

_lock = threading.Lock()
_registered = False
# Whether matex writes its own entries in torch's flight recorder
# (csrc/flight_record.h) instead of torch's generic hook writing them.
_native_flight_recording = False


def _create(options, backend_options=None):
    world_rank, world_size = _native.extension().world()
    _launcher.check_world(options.group_rank, options.group_size, world_rank, world_size,
                          list(options.global_ranks_in_group))
    timeout = options.timeout.total_seconds() if hasattr(options.timeout, "total_seconds") else float(options.timeout)
    _native.extension().set_native_flight_recording(_native_flight_recording)
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
        _claim_flight_recording()
        _registered = True


def _self_recording_backends():
    table = getattr(distributed_c10d, "_FR_SELF_RECORDING_BACKENDS", None)
    return table if isinstance(table, set) else None


def _claim_flight_recording():
    """matex records its calls in torch's flight recorder itself, as gloo
    does: torch is told so, and attaches no recording hook to groups that
    matex serves alone. Where torch cannot be told (another torch), the hook
    records matex's calls, and matex does not."""
    global _native_flight_recording
    table = _self_recording_backends()
    if table is not None:
        table.add("matex")
    _native_flight_recording = table is not None


def share_process_groups(backend_string):
    """Called with the backend string of groups that mix matex with another
    backend ("cpu:matex,cuda:nccl"). If that one needs torch's recording hook,
    the hook is attached to the group and records matex's calls too, so matex
    stops recording its own (for the groups created from now on)."""
    global _native_flight_recording
    table = _self_recording_backends()
    others = [pair.split(":", 1)[1].strip() for pair in backend_string.split(",") if ":" in pair]
    if table is not None and any(name != "matex" and name not in table for name in others):
        table.discard("matex")
        _native_flight_recording = False
        # At once, for split_group too, which creates backends without _create.
        _native.extension().set_native_flight_recording(False)


def is_registered():
    return _registered


def shutdown():
    """Closes every matex process group, then MPI (at exit, automatically).
    Collective: every rank must reach it."""
    if _native._module is not None:
        _native._module.shutdown()
