"""MATEX_ENABLE=1 for existing torch.distributed jobs: a process group asked
for with "gloo", or with no backend, gets "cpu:matex" instead: CPU tensors go
through matex with gloo's semantics, CUDA tensors keep NCCL unless
MATEX_TORCH_CUDA=matex sends them to libmatexcomm's device path too. Rank 0
prints one line saying so. Scripts that
name another backend are left alone. init_process_group and new_group are
wrapped where torch.distributed, distributed_c10d and device_mesh hold them."""
import functools
import os
import sys

import torch
import torch.distributed as dist
import torch.distributed.distributed_c10d as c10d

from . import _backend, _launcher, _native

_announced = False


def _device_string(cuda_backend):
    parts = ["cpu:matex"]
    if cuda_backend and torch.cuda.is_available():
        parts.append(f"cuda:{cuda_backend}")
    used = ",".join(parts)
    _backend.share_process_groups(used)
    return used


def _cuda_backend():
    """What CUDA tensors of a taken-over group use: MATEX_TORCH_CUDA."""
    return _native.extension().config("MATEX_TORCH_CUDA")


def translate(backend):
    """The backend string matex runs a request for `backend` as (None: unchanged)."""
    if backend is None or str(backend).lower() in ("undefined", ""):
        # torch 2.15 maps no backend to the accelerator's only, so say it all.
        return _device_string(_cuda_backend()) if torch.cuda.is_available() else None
    text = str(backend).lower()
    if text == "gloo":
        return _device_string(_cuda_backend())
    if ":" in text and "matex" in text:
        _backend.share_process_groups(text)  # the script mixes matex with another backend itself
    if ":" in text:
        pairs = [part.split(":", 1) for part in text.split(",")]
        if any(device.strip() == "cpu" and name.strip() == "gloo" for device, name in pairs):
            used = ",".join(f"{device.strip()}:{'matex' if device.strip() == 'cpu' and name.strip() == 'gloo' else name.strip()}"
                            for device, name in pairs)
            _backend.share_process_groups(used)
            return used
    return None


def _announce(requested, used):
    global _announced
    if _announced:
        return
    _announced = True
    rank = os.environ.get("RANK") or os.environ.get("OMPI_COMM_WORLD_RANK") or os.environ.get("PMI_RANK") or "0"
    if rank == "0":
        print(f"matex: MATEX_ENABLE=1: process group backend {requested!r} runs as {used!r}", file=sys.stderr,
              flush=True)


def _wrap(function, position):
    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        if "backend" in kwargs:
            requested = kwargs["backend"]
        elif len(args) > position:
            requested = args[position]
        else:
            requested = None
        used = translate(requested)
        if used is not None:
            if "backend" in kwargs or len(args) <= position:
                kwargs["backend"] = used
            else:
                args = args[:position] + (used,) + args[position + 1:]
            _announce(requested, used)
        elif requested is None and function.__name__ == "init_process_group":
            _announce("default", "cpu:matex")
        return function(*args, **kwargs)

    wrapper._matex_takeover = True
    return wrapper


def install():
    # Scripts written for torchrun read RANK and WORLD_SIZE themselves.
    _launcher.export_ranks()
    _backend.register()
    dist.Backend.default_device_backend_map["cpu"] = "matex"
    import torch.distributed.device_mesh as device_mesh  # bound these names at its import
    for name, position in (("init_process_group", 0), ("new_group", 2)):
        original = getattr(c10d, name)
        if getattr(original, "_matex_takeover", False):
            continue
        wrapped = _wrap(original, position)
        for module in (c10d, dist, device_mesh):
            if getattr(module, name, None) is original:
                setattr(module, name, wrapped)
