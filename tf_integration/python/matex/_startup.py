"""The env-gated startup hook, run by matex-activate.pth at every interpreter
start. Without MATEX_ENABLE=1 it does nothing beyond one environment lookup.
With it, it waits for the script to import TensorFlow (or Keras) and then
activates matex (matex/_activation.py) right after that import finishes, so
that an unmodified script trains data-parallel under mpirun.
"""
import os
import sys

_WATCHED = ("tensorflow", "keras")


def install():
    # The spellings libmatexcomm's table accepts for a true MATEX_ENABLE; the
    # activation then validates every MATEX_* setting through the table.
    if os.environ.get("MATEX_ENABLE", "").strip().lower() not in ("1", "true", "yes", "on"):
        return
    if any(isinstance(f, _AfterImport) for f in sys.meta_path):
        return
    sys.meta_path.insert(0, _AfterImport())


class _Loader:
    """Runs the real loader, then activates matex once."""

    def __init__(self, loader):
        self._loader = loader

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        self._loader.exec_module(module)
        from . import _activation
        _activation.activate()

    def __getattr__(self, name):
        return getattr(self._loader, name)


class _AfterImport:
    def __init__(self):
        self._busy = False

    def find_spec(self, fullname, path=None, target=None):
        if fullname not in _WATCHED or self._busy:
            return None
        self._busy = True
        try:
            import importlib.util
            spec = importlib.util.find_spec(fullname)
        finally:
            self._busy = False
        if spec is None or spec.loader is None:
            return None
        spec.loader = _Loader(spec.loader)
        sys.meta_path[:] = [f for f in sys.meta_path if f is not self]  # once is enough
        return spec
