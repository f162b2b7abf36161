"""The `torch.backends` entry point, which `import torch` calls at its end.
It must be cheap and never break torch's import: it wraps the env://
rendezvous (matex_torch/_launcher.py) so that scripts under mpirun or srun
need no MASTER_ADDR, and with MATEX_ENABLE=1 it makes gloo process groups
run on matex (matex_torch/_takeover.py). It loads no native code."""
import os
import sys

_TRUE = ("1", "true", "yes", "on")


def autoload():
    try:
        from . import _launcher
        _launcher.install_env_rendezvous()
        if os.environ.get("MATEX_ENABLE", "").strip().lower() in _TRUE:
            from . import _takeover
            _takeover.install()
    except Exception as error:  # never break `import torch`
        print(f"matex_torch: start-up hook failed, continuing without it: {error!r}", file=sys.stderr)
