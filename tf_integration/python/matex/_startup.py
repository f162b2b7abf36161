"""The env-gated startup hook, run by matex-activate.pth at every interpreter
start. Without MATEX_ENABLE=1 it does nothing beyond one environment lookup.
With it, it waits for the script to import TensorFlow (or Keras, or tf_keras) and then
activates matex (matex/_activation.py) right after that import finishes, so
that an unmodified script trains data-parallel under mpirun.
"""
import os
import sys

# tf_keras too: a script that imports it first must activate once it has
# finished importing (it imports tensorflow on the way), so it can be patched.
_WATCHED = ("tensorflow", "keras", "tf_keras")


def install():
    # The spellings libmatexcomm's table accepts for a true MATEX_ENABLE; the
    # activation then validates every MATEX_* setting through the table.
    if os.environ.get("MATEX_ENABLE", "").strip().lower() not in ("1", "true", "yes", "on"):
        return
    if any(isinstance(f, _AfterImport) and f.names == _WATCHED for f in sys.meta_path):
        return
    sys.meta_path.insert(0, _AfterImport(_WATCHED, _activate))


executed = set()  # modules a watched import has finished executing


def _activate():
    from . import _activation
    _activation.activate()


def after_import(name, callback):
    """Runs callback once, right after the first import of module `name`."""
    sys.meta_path.insert(0, _AfterImport((name,), callback))


class _Loader:
    """Runs the real loader, then the finder's callback (once)."""

    def __init__(self, loader, finder):
        self._loader = loader
        self._finder = finder

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        self._finder.depth += 1
        try:
            self._loader.exec_module(module)
        finally:
            self._finder.depth -= 1
        executed.add(module.__name__)  # importlib still marks it as initializing during the callback
        if self._finder.depth == 0:  # tf_keras imports tensorflow: call back once tf_keras is done
            self._finder.loaded()

    def __getattr__(self, name):
        return getattr(self._loader, name)


class _AfterImport:
    """Hands the watched modules' specs a loader that calls back after
    loading. It leaves sys.meta_path only then: a package that merely probes
    with importlib.util.find_spec("tensorflow") must not switch matex off."""

    def __init__(self, names, callback):
        self.names = names
        self._callback = callback
        self._busy = False
        self._done = False
        self.depth = 0  # watched modules being executed, one inside another

    def loaded(self):
        if self._done:
            return
        self._done = True
        sys.meta_path[:] = [f for f in sys.meta_path if f is not self]
        self._callback()

    def find_spec(self, fullname, path=None, target=None):
        if fullname not in self.names or self._busy or self._done:
            return None
        self._busy = True
        try:
            import importlib.util
            spec = importlib.util.find_spec(fullname)
        finally:
            self._busy = False
        if spec is None or spec.loader is None:
            return None
        spec.loader = _Loader(spec.loader, self)
        return spec
