"""Calling back right after a module's first import has finished: a finder on
sys.meta_path hands the watched modules' specs a loader that runs the real
one, then the callback (once). It imports nothing of matex, so every layer
may use it: the startup hook (_startup.py), the verify recorder
(_verify_log.py) and the tf_keras patches.
"""
import sys

executed = set()  # modules a watched import has finished executing


def after_import(names, callback):
    """Runs callback once, right after the first of `names` (a module name or a
    tuple of them) has finished importing. A watched module that imports
    another watched one calls back once the outer import is done."""
    names = (names,) if isinstance(names, str) else tuple(names)
    sys.meta_path.insert(0, _AfterImport(names, callback))


def is_watching(names):
    return any(isinstance(f, _AfterImport) and f.names == tuple(names) for f in sys.meta_path)


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
    """Leaves sys.meta_path only once a watched module has loaded: a package
    that merely probes with importlib.util.find_spec("tensorflow") must not
    switch the callback off."""

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
