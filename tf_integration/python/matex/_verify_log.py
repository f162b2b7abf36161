"""The figures `python -m matex.verify` compares, written as JSON lines to a
file by one process: the plain reference run (no matex; the recorder is
installed by a sitecustomize that matex.verify puts on the path) and rank 0
of the MATEX_ENABLE=1 run (MATEX_VERIFY_LOG) record them the same way.

- "step": after every optimizer update, the L2 norm of each variable the
  optimizer updates (Keras 3, tf_keras and TF1 optimizers alike);
- "logs": the numeric logs of every fit batch (loss, metrics, the script's
  own train_step logs);
- "evaluate": the results of every evaluate call;
- "metric": every result() of a Keras metric that the script reads itself,
  eagerly, outside fit and evaluate (a custom loop printing its metrics);
- "fetch": every scalar float value a TF1 Session.run returns together
  with a training op.

Everything is read outside the traced and compiled steps, eagerly, after the
call that ran them has returned to Python, so the recorder adds no op to the
script's graphs (an XLA-compiled step stays compilable) and changes no value.
It imports nothing of matex's runtime: the plain run has no MPI.
"""
import json
import threading
import weakref

from ._patching import arguments_as_keywords

_lock = threading.Lock()
_path = [None]
_local = threading.local()      # depth counters of the calls being wrapped
_optimizers = []                # weak references to optimizers, in the order they first updated
_variables = weakref.WeakKeyDictionary()   # optimizer -> the variables it updates
_iterations = weakref.WeakKeyDictionary()  # optimizer -> its update count when last recorded
_MARK = "_matex_recorder"


def install(path):
    """Records into `path` from now on (once per process). TensorFlow must be
    imported; Keras 3 and tf_keras are patched if present (tf_keras also when
    imported later)."""
    if _path[0] is not None:
        return
    _path[0] = path
    import tensorflow as tf
    from tensorflow.python.eager.polymorphic_function import polymorphic_function
    _wrap(polymorphic_function.Function, "__call__", _make_function_call)
    _wrap(tf.compat.v1.train.Optimizer, "apply_gradients", _make_tf1_apply_gradients)
    _wrap(tf.compat.v1.Session, "run", _make_session_run)
    try:
        import keras  # noqa: F401
    except ImportError:
        keras = None
    if keras is not None and keras.__version__.startswith("3."):
        _install_keras3()
    from . import _import_hook
    import sys
    if "tf_keras" in sys.modules:
        _install_tf_keras()
    else:
        _import_hook.after_import("tf_keras", _install_tf_keras)


def install_when_imported(path, names=("tensorflow", "keras", "tf_keras")):
    """The plain reference run: install(path) right after the script imports TensorFlow."""
    from . import _import_hook
    _import_hook.after_import(names, lambda: install(path))


# ---- writing -------------------------------------------------------------------------------------------

def _write(record):
    with _lock, open(_path[0], "a") as out:
        out.write(json.dumps(record) + "\n")


def _depth(name):
    return getattr(_local, name, 0)


class _Inside:
    def __init__(self, name):
        self._name = name

    def __enter__(self):
        setattr(_local, self._name, _depth(self._name) + 1)

    def __exit__(self, *exc):
        setattr(_local, self._name, _depth(self._name) - 1)


def _wrap(owner, name, make):
    original = getattr(owner, name)
    if getattr(original, _MARK, False):
        return
    wrapped = make(original)
    setattr(wrapped, _MARK, True)
    for attribute in ("__name__", "__qualname__", "__doc__"):
        if hasattr(original, attribute):
            setattr(wrapped, attribute, getattr(original, attribute))
    wrapped.__wrapped__ = original  # inspect.signature(wrapped) is the original's
    setattr(owner, name, wrapped)


def _scalar(value):
    """A Python float for a numeric scalar (tensor, NumPy or Python), else None."""
    try:
        import numpy as np
        array = np.asarray(value)
        if array.shape == () and array.dtype.kind in "fiub":
            return float(array)
    except Exception:  # noqa: BLE001 - anything that is no number is not recorded
        pass
    return None


# ---- optimizer steps -----------------------------------------------------------------------------------

def _note_optimizer(optimizer, variables):
    if optimizer not in _variables:
        _optimizers.append(weakref.ref(optimizer))
        _iterations[optimizer] = _count(optimizer)
    if variables:
        _variables[optimizer] = list(variables)


def _count(optimizer):
    try:
        return int(optimizer.iterations.numpy())
    except Exception:  # noqa: BLE001 - not built yet
        return 0


def _record_updates():
    """Eagerly: one "step" record per update an optimizer made since the last record."""
    import tensorflow as tf
    for reference in list(_optimizers):
        optimizer = reference()
        if optimizer is None or optimizer not in _variables:
            continue
        count = _count(optimizer)
        if count <= _iterations.get(optimizer, 0):
            continue
        updates, _iterations[optimizer] = count - _iterations.get(optimizer, 0), count
        norms = [float(tf.norm(tf.cast(tf.convert_to_tensor(v), tf.float64))) for v in _variables[optimizer]]
        _write({"kind": "step", "updates": updates, "norms": norms})


def _make_function_call(original):
    def __call__(self, *args, **kwargs):
        with _Inside("function"):
            result = original(self, *args, **kwargs)
        import tensorflow as tf
        if _depth("function") == 0 and tf.executing_eagerly():
            _record_updates()
        return result
    return __call__


def _make_apply(original, variables_of):
    def apply(self, *args, **kwargs):
        if _depth("apply") == 0:  # a loss-scale optimizer's inner update is the same step
            _note_optimizer(self, variables_of(self, *args, **kwargs))
        with _Inside("apply"):
            result = original(self, *args, **kwargs)
        import tensorflow as tf
        if _depth("apply") == 0 and _depth("function") == 0 and tf.executing_eagerly():
            _record_updates()  # an eager update, outside any tf.function
        return result
    return apply


def _keras3_variables(optimizer, grads, trainable_variables=None):
    if trainable_variables is not None:
        return list(trainable_variables)
    return list(getattr(optimizer, "_trainable_variables", []) or [])


def _make_pairs_apply(original):
    """apply_gradients(grads_and_vars) of tf_keras: the pairs may be an iterator."""
    inner = _make_apply(original, lambda self, pairs, *a, **k: [v for g, v in pairs if g is not None])

    def apply_gradients(self, grads_and_vars, *args, **kwargs):
        return inner(self, list(grads_and_vars), *args, **kwargs)
    return apply_gradients


# ---- fit, evaluate, metrics (Keras 3 and tf_keras) -------------------------------------------------------

def _make_fit(callback_type):
    def make(original):
        def fit(self, *args, **kwargs):
            arguments = arguments_as_keywords(original, self, args, kwargs)
            callbacks = arguments.get("callbacks")
            if callbacks is None or isinstance(callbacks, (list, tuple)):
                arguments["callbacks"] = list(callbacks or []) + [_logs_recorder(callback_type)]
            with _Inside("fit"):
                return original(self, **arguments)
        return fit
    return make


def _logs_recorder(callback_type):
    state = {"epoch": 0}

    def batch_end(batch, logs=None):
        values = {k: _scalar(v) for k, v in sorted((logs or {}).items())}
        _write({"kind": "logs", "epoch": state["epoch"], "batch": batch,
                "values": {k: v for k, v in values.items() if v is not None}})

    return callback_type(on_epoch_begin=lambda epoch, logs=None: state.update(epoch=epoch),
                         on_train_batch_end=batch_end)


def _make_evaluate(original):
    def evaluate(self, *args, **kwargs):
        with _Inside("fit"):
            result = original(self, *args, **kwargs)
        values = result.values() if isinstance(result, dict) else (
            result if isinstance(result, (list, tuple)) else [result])
        _write({"kind": "evaluate", "values": [_scalar(v) for v in values]})
        return result
    return evaluate


def _make_metric_result(original):
    def result(self, *args, **kwargs):
        with _Inside("metric"):
            value = original(self, *args, **kwargs)
        import tensorflow as tf
        if _depth("metric") == 0 and _depth("fit") == 0 and _depth("function") == 0 and tf.executing_eagerly():
            items = sorted(value.items()) if isinstance(value, dict) else [("", value)]
            for key, item in items:
                number = _scalar(item)
                if number is not None:
                    _write({"kind": "metric", "name": f"{self.name}{'.' + key if key else ''}", "value": number})
        return value
    return result


def _install_keras3():
    import keras
    from keras.src.backend.tensorflow import trainer as tf_trainer
    from keras.src.metrics.metric import Metric
    from keras.src.optimizers import base_optimizer, loss_scale_optimizer
    _wrap(base_optimizer.BaseOptimizer, "apply", lambda o: _make_apply(o, _keras3_variables))
    _wrap(loss_scale_optimizer.LossScaleOptimizer, "apply", lambda o: _make_apply(o, _keras3_variables))
    _wrap(tf_trainer.TensorFlowTrainer, "fit", _make_fit(keras.callbacks.LambdaCallback))
    _wrap(tf_trainer.TensorFlowTrainer, "evaluate", _make_evaluate)
    from ._patching import wrap_methods_at_init
    _wrap(Metric, "__init__", wrap_methods_at_init(Metric, {"result": _make_metric_result}, "recorder"))


def _install_tf_keras():
    import tf_keras
    from tf_keras.src.mixed_precision import loss_scale_optimizer
    from tf_keras.src.optimizers import optimizer as new_optimizer
    from tf_keras.src.optimizers.legacy import optimizer_v2
    for owner in (new_optimizer.Optimizer, optimizer_v2.OptimizerV2, loss_scale_optimizer.LossScaleOptimizer,
                  loss_scale_optimizer.LossScaleOptimizerV3):
        _wrap(owner, "apply_gradients", _make_pairs_apply)
    _wrap(tf_keras.Model, "fit", _make_fit(tf_keras.callbacks.LambdaCallback))
    _wrap(tf_keras.Model, "evaluate", _make_evaluate)


# ---- TF1 graphs ------------------------------------------------------------------------------------------

_training_ops = {}  # (graph, op name) -> the variables it updates
_norms = {}         # (graph, op name) -> the ops computing their norms


def _make_tf1_apply_gradients(original):
    def apply_gradients(self, grads_and_vars, *args, **kwargs):
        pairs = list(grads_and_vars)
        op = original(self, pairs, *args, **kwargs)
        import tensorflow as tf
        if not tf.executing_eagerly():
            key = (op.graph, op.name)
            _training_ops[key] = [v for g, v in pairs if g is not None]
            with op.graph.as_default():  # now: a finalized graph takes no new op at Session.run
                _norms[key] = [tf.norm(tf.cast(v, tf.float64)) for v in _training_ops[key]]
        return op
    return apply_gradients


def _make_session_run(original):
    def run(self, fetches, *args, **kwargs):
        result = original(self, fetches, *args, **kwargs)
        if _depth("session") > 0:
            return result
        import tensorflow as tf
        flat = tf.nest.flatten(fetches)
        trained = [(self.graph, getattr(f, "name", None)) for f in flat]
        trained = [key for key in trained if key in _training_ops]
        if not trained:
            return result
        with _Inside("session"):
            for index, (fetch, value) in enumerate(zip(flat, tf.nest.flatten(result))):
                number = _scalar(value) if isinstance(fetch, tf.Tensor) and fetch.dtype.is_floating else None
                if number is not None:
                    _write({"kind": "fetch", "index": index, "name": fetch.name, "value": number})
            for key in trained:
                norms = original(self, _norms[key])
                _write({"kind": "step", "updates": 1, "norms": [float(n) for n in norms]})
        return result
    return run
