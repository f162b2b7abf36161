"""The `torch.backends` entry point, which `import torch` calls at its end.
It must be cheap and never break torch's import: it wraps the env://
rendezvous (matex_torch/_launcher.py) so that scripts under mpirun or srun
need no MASTER_ADDR, and with MATEX_ENABLE=1 it makes gloo process groups
run on matex (matex_torch/_takeover.py). It loads no native code. Where the
binding was not built, or torch is outside the supported range
(matex/_build.py), it does nothing, unless MATEX_ENABLE=1 asked for the
takeover: then the job stops here with the reason, before anything is patched."""
import os
import sys

_TRUE = ("1", "true", "yes", "on")


def _unsupported():
    """Why this torch cannot run the binding, or None."""
    import glob

    import torch
    from matex import _build
    built = bool(glob.glob(os.path.join(os.path.dirname(os.path.abspath(__file__)), "_matex_torch*.so")))
    try:
        _build.check("torch", torch.__version__, built,
                     "Install a PyTorch in the supported range, then reinstall matex (pip install <repository>)")
    except _build.UnsupportedVersion as error:
        return str(error)
    return None


def autoload():
    enabled = os.environ.get("MATEX_ENABLE", "").strip().lower() in _TRUE
    try:
        why = _unsupported()
    except Exception as error:  # never break `import torch` over the check itself
        why = None
        print(f"matex_torch: version check failed, continuing: {error!r}", file=sys.stderr)
    if why is not None:
        if enabled:
            print(why, file=sys.stderr, flush=True)
            raise SystemExit(1)
        return
    try:
        from . import _launcher
        _launcher.install_env_rendezvous()
        if enabled:
            from . import _takeover
            _takeover.install()
    except Exception as error:  # never break `import torch`
        print(f"matex_torch: start-up hook failed, continuing without it: {error!r}", file=sys.stderr)
