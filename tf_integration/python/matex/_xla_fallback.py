"""The safety net for XLA where matex's collectives cannot be compiled: on a
GPU (XLA:GPU has no lowering of them; ops/xla_lowerings.cc lowers them for
XLA:CPU) or with an op library built without the lowerings. There a
tf.function(jit_compile=True) that holds the collectives (a custom loop's
step that applies gradients) is traced again without XLA, once, with a
warning naming it, instead of failing with XLA's "unsupported operations"
error. XLA compiles before anything runs, so no collective has started on
any rank, and every rank falls back alike (same script, same error). Keras'
compile(jit_compile=True) is turned off the same way (_keras_patches). A
jit_compile=True function called inside one without XLA is not caught (the
outer function fails). Numerically such a step differs from a plain XLA run
by rounding, and by the random numbers when it draws any (XLA's generators
are not TensorFlow's kernels').
"""
import warnings

import tensorflow as tf
from tensorflow.python.eager.polymorphic_function import polymorphic_function

_MARKERS = ("MatexAllreduce", "MatexBroadcast", "MatexAllgather")


def _is_ours(error):
    text = str(error)
    return "unsupported operations" in text and any(m in text for m in _MARKERS)


def _make_call(original):
    def __call__(self, *args, **kwargs):
        if not getattr(self, "_jit_compile", False):
            return original(self, *args, **kwargs)
        try:
            return original(self, *args, **kwargs)
        except tf.errors.InvalidArgumentError as error:
            if not _is_ours(error):
                raise
            warnings.warn(f"matex: tf.function {getattr(self, '_name', '?')!r} has jit_compile=True but holds matex "
                          "collectives, which XLA cannot compile on this device or build; it runs without XLA")
            from tensorflow.core.function.polymorphism import function_cache
            self._jit_compile = False
            self._function_cache = function_cache.FunctionCache()
            self._variable_creation_config = None
            self._no_variable_creation_config = None
            self._created_variables = None  # else a function that made variables would run as a no-op
            return original(self, *args, **kwargs)
    return __call__


def apply_all(patch):
    patch(polymorphic_function.Function, "__call__", _make_call)
