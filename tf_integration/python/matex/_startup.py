"""The env-gated startup hook, run by matex-activate.pth at every interpreter
start. Without MATEX_ENABLE=1 it does nothing beyond one environment lookup.
With it, it waits for the script to import TensorFlow (or Keras, or tf_keras) and then
activates matex (matex/_activation.py) right after that import finishes, so
that an unmodified script trains data-parallel under mpirun.
"""
import os

from . import _import_hook

# tf_keras too: a script that imports it first must activate once it has
# finished importing (it imports tensorflow on the way), so it can be patched.
WATCHED = ("tensorflow", "keras", "tf_keras")


def install():
    # The spellings libmatexcomm's table accepts for a true MATEX_ENABLE; the
    # activation then validates every MATEX_* setting through the table.
    if os.environ.get("MATEX_ENABLE", "").strip().lower() not in ("1", "true", "yes", "on"):
        return
    if _import_hook.is_watching(WATCHED):
        return
    from . import _threads
    _threads.env_defaults()  # before the script imports NumPy
    _import_hook.after_import(WATCHED, _activate)


def _activate():
    from . import _activation
    _activation.activate()
