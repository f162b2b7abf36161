"""The env-gated startup hook, run by matex-activate.pth at every interpreter
start. Without MATEX_ENABLE=1 or MATEX_HOROVOD=1 it does nothing beyond two
environment lookups. MATEX_HOROVOD=1 puts the folder of Horovod's API served
by matex (matex_horovod/) first on sys.path, so that `import horovod` finds it.
With it, it waits for the script to import TensorFlow (or Keras, or tf_keras) and then
activates matex (matex/_activation.py) right after that import finishes, so
that an unmodified script trains data-parallel under mpirun.
"""
import os

from . import _import_hook

# tf_keras too: a script that imports it first must activate once it has
# finished importing (it imports tensorflow on the way), so it can be patched.
WATCHED = ("tensorflow", "keras", "tf_keras")


def _on(name):
    # The spellings libmatexcomm's table accepts for a true boolean; the
    # activation then validates every MATEX_* setting through the table.
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")


def install():
    if _on("MATEX_HOROVOD"):
        import sys
        from . import _libraries
        if _libraries.HOROVOD_FOLDER not in sys.path:
            sys.path.insert(0, _libraries.HOROVOD_FOLDER)
    if not _on("MATEX_ENABLE"):
        return
    if _import_hook.is_watching(WATCHED):
        return
    from . import _threads
    _threads.env_defaults()  # before the script imports NumPy
    _import_hook.after_import(WATCHED, _activate)


def _activate():
    from . import _activation
    _activation.activate()
