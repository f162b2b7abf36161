"""Keras metrics that the script updates itself (in its own train_step or
test_step, or in a custom loop) aggregate exactly over the global batch
(MATEX_ENABLE=1, 2+ ranks).

Each rank updates its metric with what it holds, and a result is computed
from the metric's states summed over ranks (one grouped allreduce), which is
exact for states that add up (totals, counts, confusion matrices). Two kinds
of update need a weight to make the sums those of one process:

- a scalar value (`Mean(loss)` of the rank's mean loss) stands for a mean
  over the rank's rows: it is weighted by the rank's share of the global
  batch, local / global rows, so that per-rank means add up to the global
  mean, with uneven slices too. A scalar sample_weight equal to the rank's
  row count is the script weighting by batch size itself (Keras' own loss
  tracker does) and is kept: it adds up to the global batch size. A rank
  with an empty slice adds nothing (its mean of nothing is not added).
- when every rank holds the same rows (a custom loop's first step, a loop
  that does not train, data that is not sliced), each rank's update counts
  1/N, so that N copies add up to one.

Keras' own updates (fit's loss tracker, compile's metrics, compute_loss and
compute_metrics) are left alone: fit and evaluate sum their states already
(_keras_patches.get_metrics_result). Reading result() outside fit and
evaluate (a custom loop printing its metrics) gives the summed result on
every rank; inside, fit's aggregation gives it. A metric whose update_state
takes no sample_weight is left per rank, and so is one whose states do not
add up (a running maximum, say).
"""
import inspect
import threading

import tensorflow as tf

from . import _batch_layout, _collectives, _runtime, _scope
from ._patching import wrap_methods_at_init

_local = threading.local()


def _busy():
    return getattr(_local, "depth", 0) > 0


class _Busy:
    def __enter__(self):
        _local.depth = getattr(_local, "depth", 0) + 1

    def __exit__(self, *exc):
        _local.depth -= 1


def with_summed_states(variables, compute):
    """compute() with the metric state variables holding their sums over
    ranks, which are then restored: one grouped allreduce."""
    local = [tf.identity(tf.convert_to_tensor(v)) for v in variables]
    summed = _collectives.allreduce(local, op="sum")
    for v, s in zip(variables, summed):
        v.assign(s)
    result = tf.nest.map_structure(tf.identity, compute())
    for v, value in zip(variables, local):
        v.assign(value)
    return result


def _rows_match(values, layout):
    """Eagerly, whether per-example values are the layout's rows (data that
    did not come from the sliced iterator does not follow its layout)."""
    if not tf.executing_eagerly() or values.shape.rank == 0 or values.shape[0] is None:
        return True
    return int(values.shape[0]) == int(tf.convert_to_tensor(layout.local))


def _weighted(values, weight, layout, dtype):
    """(values, sample_weight) that make this rank's update its part of one
    process's update (values None: left as they are), or None when the
    update needs no change. `values` is the update's first tensor."""
    copies = layout.copies
    if values.shape.rank != 0:
        if isinstance(copies, int) and copies == 1:
            return None  # a slice of fit's batch: the summed states are exact as they are
        if weight is not None:
            return None, tf.cast(weight, dtype) / tf.cast(copies, dtype)
        # One weight per row: Keras counts a scalar weight once, not once per row.
        return None, tf.fill(tf.shape(values)[:1], 1 / tf.cast(copies, dtype))
    local, copies = tf.cast(layout.local, dtype), tf.cast(copies, dtype)
    share = tf.math.divide_no_nan(local, tf.cast(layout.total, dtype) * copies)
    if weight is not None and tf.convert_to_tensor(weight).shape.rank == 0:
        share = tf.where(tf.equal(tf.cast(weight, dtype), local), 1 / copies, share)
    if values.dtype.is_floating:  # an empty slice's mean of nothing (NaN) adds nothing, whatever its weight
        values = tf.where(local > 0, values, tf.zeros_like(values))
        share = tf.where(local > 0, share, tf.zeros_like(share))
    else:
        values = None
    return values, (share if weight is None else tf.cast(weight, dtype) * share)


def _first_tensor(value):
    """The first tensor of an update's first argument (a tensor, or a list
    or dict of them), or None for what is not dense (sparse, ragged)."""
    parts = tf.nest.flatten(value)
    if not parts:
        return None
    try:
        return tf.convert_to_tensor(parts[0])
    except (TypeError, ValueError):
        return None


def _make_update_state(original):
    signature = inspect.signature(original)
    parameters = list(signature.parameters.values())
    first = parameters[1].name if len(parameters) > 1 else None
    takes_weight = ("sample_weight" in signature.parameters and first not in (None, "sample_weight")
                    and parameters[1].kind is inspect.Parameter.POSITIONAL_OR_KEYWORD)

    def update_state(self, *args, **kwargs):
        if (_busy() or not takes_weight or _scope.flag("keras_metrics") or _runtime.size() == 1
                or tf.distribute.has_strategy()):
            return original(self, *args, **kwargs)
        layout = _batch_layout.of_last_step(eager_too=True)
        bound = signature.bind(self, *args, **kwargs)
        values = _first_tensor(bound.arguments[first]) if first in bound.arguments else None
        if layout is None or values is None:
            return original(self, *args, **kwargs)
        if not _rows_match(values, layout):
            layout = _batch_layout.current()
        change = _weighted(values, bound.arguments.get("sample_weight"), layout, tf.as_dtype(self.dtype))
        self._matex_sliced = True
        with _Busy():
            if change is None:
                return original(self, *args, **kwargs)
            new_values, bound.arguments["sample_weight"] = change
            if new_values is not None and not tf.nest.is_nested(bound.arguments[first]):
                bound.arguments[first] = new_values
            return original(*bound.args, **bound.kwargs)
    return update_state


def _make_result(original):
    def result(self, *args, **kwargs):
        if _busy() or not getattr(self, "_matex_sliced", False) or _scope.flag("sharding") or _runtime.size() == 1:
            return original(self, *args, **kwargs)
        with _Busy():
            return with_summed_states(list(self.variables), lambda: original(self, *args, **kwargs))
    return result


def apply_all(patch):
    from keras.src.metrics.metric import Metric
    from keras.src.trainers import trainer as base_trainer
    patch(Metric, "__init__", wrap_methods_at_init(
        Metric, {"update_state": _make_update_state, "result": _make_result}, "metric patches"))
    # Keras' own metric updates (compute_loss, compute_metrics): left alone.
    patch(base_trainer.Trainer, "compute_loss", _scope.while_set("keras_metrics"))
    patch(base_trainer.Trainer, "compute_metrics", _scope.while_set("keras_metrics"))
