"""Losses that a script writes for a global batch (MATEX_ENABLE=1, 2+ ranks,
on a rank that holds a slice of the batch):

- tf.nn.compute_average_loss(per_example, global_batch_size=B): one process
  returns sum(batch) / B. On a slice the local sum / B is 1/N of that, and
  averaging gradients would make each step 1/N as large. Its value here is
  the sum over ranks (one scalar allreduce) / B, the one-process figure on
  every rank; its gradient is B/n_r times the local one, which the weighted
  gradient reduction (_gradients.py) turns into one process's. Without a
  global_batch_size one process divides by its per-example losses' rows:
  the sum of every rank's here (in the same allreduce). tf.nn.scale_regularization_loss needs nothing: every rank adds the
  same regularization gradient.
- a Keras loss with reduction="sum": the same, its value the global sum.
- a Keras loss with reduction=None returns per-example values that the
  script reduces itself. compute_average_loss and a mean are exact; a sum
  divided by a number matex cannot see (the global batch size) gives 1/N of
  one process's gradient. A traced step that sums them warns once, naming
  the loss; so does an eager step that reduces them other than with
  compute_average_loss (eagerly, matex cannot tell a mean from a sum).
- optimizer.scale_loss (Keras 3; fit calls it in every step, a custom loop
  with a LossScaleOptimizer calls it itself): for a LossScaleOptimizer, or
  under a float16 or bfloat16 policy, the loss is also scaled by n_r / B, so
  that every example's gradient has one process's magnitude all the way back
  (float16 overflows, and a dynamic loss scale skips steps, exactly where one
  process's do) and the ranks' gradients are summed (_gradients.py).

When every rank holds the whole batch (a custom loop's first step) nothing
changes.
"""
import threading
import warnings
import weakref

import tensorflow as tf

from . import _batch_layout, _collectives, _gradients, _runtime, _scope
from ._patching import patch_everywhere, rebind

_warned = set()
_lock = threading.Lock()
# graph (None: eagerly) -> {tensor ref: loss name}: per-example losses of reduction=None not yet reduced
_unreduced = weakref.WeakKeyDictionary()
_eager_unreduced = {}


def _sliced_layout():
    """The layout of the batch being trained on, when the ranks may hold
    slices of it; None where nothing must change (one rank, a strategy,
    eagerly when every rank holds the whole batch)."""
    if _runtime.size() == 1 or tf.distribute.has_strategy() or _scope.flag("reduced"):
        return None
    layout = _batch_layout.of_last_step()
    if layout is None:
        return None
    if tf.executing_eagerly() and not isinstance(layout.copies, int) and int(layout.copies) > 1:
        return None
    return layout


def _global_sum(local_sum, layout, rows=None):
    """The sum over the global batch, on every rank, of a sum over this
    rank's rows; its gradient B/n_r times the local one (weighted reduction).
    With `rows`, also the sum over ranks of that count (in the same
    allreduce). Where every rank holds the whole batch (copies > 1), the
    local values, bit for bit."""
    dtype = local_sum.dtype
    sliced = tf.equal(layout.copies, 1)
    factor = tf.math.divide_no_nan(tf.cast(layout.total, dtype), tf.cast(layout.local, dtype))
    local = [local_sum] if rows is None else [local_sum, tf.cast(rows, tf.float64)]  # counted exactly

    @tf.custom_gradient
    def summed(*xs):
        def gradient(*upstream):
            return [upstream[0] * factor] + [None] * (len(xs) - 1)
        sums = _collectives.allreduce(list(xs), op="sum")
        return [tf.where(sliced, s, x) for s, x in zip(sums, xs)], gradient
    results = summed(*local)
    return results[0] if rows is None else (results[0], results[1])


def _make_compute_average_loss(original):
    def compute_average_loss(per_example_loss, sample_weight=None, global_batch_size=None):
        layout = _sliced_layout()
        if layout is None:
            return original(per_example_loss, sample_weight=sample_weight, global_batch_size=global_batch_size)
        per_example_loss = tf.convert_to_tensor(per_example_loss)
        _forget_unreduced(per_example_loss)
        # The local sum: compute_average_loss over a "batch" of one row, with the same checks and weights.
        local_sum = original(per_example_loss, sample_weight=sample_weight, global_batch_size=1)
        if global_batch_size is None:
            # One process divides by its per-example losses' rows: the sum of every rank's here.
            total, global_rows = _global_sum(local_sum, layout, rows=tf.shape(per_example_loss)[0])
            global_batch_size = global_rows  # cast once, below, as one process casts its count
        else:
            total = _global_sum(local_sum, layout)
        return tf.math.divide_no_nan(total, tf.cast(global_batch_size, total.dtype))
    return compute_average_loss


def _make_loss_call(original):
    def call(self, *args, **kwargs):
        reduction = getattr(self, "reduction", "sum_over_batch_size")
        if reduction not in ("sum", None, "none"):
            return original(self, *args, **kwargs)
        layout = _sliced_layout()
        result = original(self, *args, **kwargs)
        if layout is None:
            return result
        if reduction == "sum":
            return _global_sum(result, layout)
        _note_unreduced(result, getattr(self, "name", None) or type(self).__name__)
        return result
    return call


def _note_unreduced(tensor, name):
    graph = _gradients.current_graph()
    with _lock:
        table = _eager_unreduced if graph is None else _unreduced.setdefault(graph, {})
        table[tensor.ref()] = name


def _forget_unreduced(tensor):
    graph = _gradients.current_graph()
    with _lock:
        table = _eager_unreduced if graph is None else _unreduced.get(graph, {})
        table.pop(tensor.ref(), None)


def _sums(tensor):
    """In a traced step, whether a reduce_sum reads the per-example losses."""
    return any(op.type == "Sum" for op in tensor.consumers())


def check_unreduced():
    """Called by an optimizer update: warns once per loss whose per-example
    values this step reduced in a way matex cannot make exact."""
    graph = _gradients.current_graph()
    with _lock:
        table = _eager_unreduced if graph is None else _unreduced.get(graph, {})
        pending = dict(table)
        table.clear()
    for ref, name in pending.items():
        if name in _warned or (graph is not None and not _sums(ref.deref())):
            continue
        _warned.add(name)
        warnings.warn(
            f"matex: the loss '{name}' (reduction=None) gives per-example values that the script reduces itself. "
            "Under MATEX_ENABLE=1 each rank holds a slice of the batch: a mean, or tf.nn.compute_average_loss("
            "..., global_batch_size=B), is exact; a sum divided by a number of the script's (the global batch "
            "size) gives 1/N of one process's gradient, and matex cannot see that number (docs/tensorflow.md)")


def _scales_to_contribution(optimizer):
    from keras.src.optimizers import loss_scale_optimizer
    if isinstance(optimizer, loss_scale_optimizer.LossScaleOptimizer):
        return True
    import keras
    return keras.mixed_precision.global_policy().compute_dtype in ("float16", "bfloat16")


def _make_scale_loss(original):
    def scale_loss(self, loss):
        scaled = original(self, loss)
        layout = _sliced_layout()
        if layout is None or not _scales_to_contribution(self):
            return scaled
        scaled = tf.convert_to_tensor(scaled)
        share = tf.math.divide_no_nan(tf.cast(layout.local, scaled.dtype), tf.cast(layout.total, scaled.dtype))
        if not isinstance(layout.copies, int) or layout.copies != 1:
            share = tf.where(tf.equal(layout.copies, 1), share, tf.ones_like(share))
        _gradients.note_contribution(self)
        return tf.math.multiply_no_nan(scaled, share)  # an empty slice's mean of nothing adds nothing
    return scale_loss


def apply_all(patch):
    from keras.src.losses.loss import Loss
    from keras.src.optimizers import base_optimizer, loss_scale_optimizer
    from tensorflow.python.ops import nn_impl_distribute
    patch(Loss, "__call__", _make_loss_call)
    patch(base_optimizer.BaseOptimizer, "scale_loss", _make_scale_loss)
    patch(loss_scale_optimizer.LossScaleOptimizer, "scale_loss", _make_scale_loss)
    replaced = {}  # tf.nn.compute_average_loss, the name the script calls, too
    patch_everywhere(patch, nn_impl_distribute, "compute_average_loss", _make_compute_average_loss, replaced)
    rebind(replaced)
