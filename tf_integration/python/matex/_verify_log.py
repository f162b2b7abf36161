"""What `python -m matex.verify` compares, written on rank 0 when
MATEX_VERIFY_LOG names a file: one JSON line per optimizer step with the L2
norm of every variable the optimizer updated (for fit, custom loops and
TF1 graphs alike), one per fit batch with the loss Keras reports, and one per
evaluate call with its results.
"""
import json
import threading

import tensorflow as tf

_lock = threading.Lock()
_steps = [0]


_UNSET = object()
_cached_path = [_UNSET]


def _path():
    """Where rank 0 logs (None elsewhere, or when not asked), looked up once:
    it is asked for at every step."""
    if _cached_path[0] is _UNSET:
        from . import _runtime
        path = _runtime.config("MATEX_VERIFY_LOG")
        _cached_path[0] = path if path and _runtime.rank() == 0 else None
    return _cached_path[0]


def _write(record):
    with _lock, open(_path(), "a") as out:
        out.write(json.dumps(record) + "\n")


def _record_norms(variables):
    """An op (or, eagerly, the act) of logging the variables' L2 norms as one step."""
    norms = [tf.norm(tf.cast(tf.convert_to_tensor(v), tf.float64)) for v in variables]

    def record(*values):
        with _lock:
            _steps[0] += 1
            step = _steps[0]
        _write({"kind": "step", "step": step, "norms": [float(v) for v in values]})
        return 0

    return tf.py_function(record, norms, Tout=tf.int32)


def after_apply(optimizer, trainable_variables):
    if _path() is None:
        return
    variables = list(trainable_variables) if trainable_variables is not None else list(optimizer._trainable_variables)
    if variables:
        _record_norms(variables)


def graph_record(variables):
    """TF1: the logging op to run with the training op (None when not logging)."""
    if _path() is None or not variables:
        return None
    return _record_norms(variables)


def record_evaluate(result):
    if _path() is None:
        return
    values = result if isinstance(result, (list, tuple)) else (list(result.values()) if isinstance(result, dict)
                                                              else [result])
    _write({"kind": "evaluate", "values": [float(v) for v in values]})


def record_loss(epoch, batch, loss):
    if _path() is not None:
        _write({"kind": "loss", "epoch": epoch, "batch": batch, "loss": float(loss)})


def with_loss_logger(callbacks):
    if _path() is None or not (callbacks is None or isinstance(callbacks, (list, tuple))):
        return callbacks
    import keras

    state = {"epoch": 0}
    logger = keras.callbacks.LambdaCallback(
        on_epoch_begin=lambda epoch, logs=None: state.update(epoch=epoch),
        on_train_batch_end=lambda batch, logs=None: record_loss(state["epoch"], batch, (logs or {}).get("loss", 0.0)))
    return list(callbacks or []) + [logger]
