"""The `torch.backends` entry point, which `import torch` calls at its end.
It must be cheap and never break torch's import: it wraps the env://
rendezvous (matex_torch/_launcher.py) so that scripts under mpirun or srun
need no MASTER_ADDR, registers the backend "matex" itself where torch is too
old to read the `torch.distributed.backends` entry point (before 2.15), and
with MATEX_ENABLE=1 makes gloo process groups run on matex
(matex_torch/_takeover.py). It loads no native code.

Where the binding was not built, or this torch is not the release it was
built for or is outside the supported range (matex/_build.py), it does
nothing, unless MATEX_ENABLE=1 asked for the takeover: then the process group
the takeover would have served (gloo or the default) is refused with the
reason, at init_process_group, and nothing is patched. A script that only
imports torch on the way (a TensorFlow job whose libraries import it) runs on."""
import functools
import os
import sys

_TRUE = ("1", "true", "yes", "on")


def _unsupported():
    """Why this torch cannot run the binding, or None."""
    import torch
    from matex import _build, _libraries
    try:
        _build.check("torch", torch.__version__, _libraries.torch_extension_built(),
                     "Install a PyTorch in the supported range, then reinstall matex (pip install <repository>)")
    except _build.UnsupportedVersion as error:
        return str(error)
    return None


def _would_take_over(backend):
    text = str(backend).lower() if backend is not None else ""
    return text in ("", "undefined", "gloo") or "cpu:gloo" in text.replace(" ", "")


def _refuse_takeover(why):
    """MATEX_ENABLE=1 on a torch the binding cannot serve: the groups the
    takeover would serve fail at creation, naming the reason."""
    import torch.distributed.distributed_c10d as c10d
    original = c10d.init_process_group

    @functools.wraps(original)
    def refusing(*args, **kwargs):
        if _would_take_over(kwargs.get("backend", args[0] if args else None)):
            raise RuntimeError(why)
        return original(*args, **kwargs)

    c10d.init_process_group = refusing
    import torch.distributed as dist
    dist.init_process_group = refusing


def autoload():
    enabled = os.environ.get("MATEX_ENABLE", "").strip().lower() in _TRUE
    try:
        why = _unsupported()
        if why is not None:
            if enabled:
                print(why, file=sys.stderr, flush=True)
                _refuse_takeover(why)
            return
        from . import _launcher
        _launcher.install_env_rendezvous()
        import torch.distributed as dist
        if not hasattr(dist.Backend, "_ensure_backend_registered"):
            from . import _backend
            _backend.register()  # no entry-point lookup in this torch: register now (no native code)
        if enabled:
            from . import _takeover
            _takeover.install()
    except Exception as error:  # never break `import torch`
        print(f"matex_torch: start-up hook failed, continuing without it: {error!r}", file=sys.stderr)
