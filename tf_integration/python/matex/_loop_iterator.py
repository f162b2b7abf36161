"""Custom loops: iterating a batched tf.data dataset from Python (`for x, y in
dataset`, `iter`, on the main thread, outside fit) under MATEX_ENABLE=1.

Once an iterator of a batched dataset has fed an optimizer update (some
optimizer's `iterations` grew between two of its elements), it hands out
rank r's contiguous slice of every later element, and writes its layout into
_batch_layout's variables for the traced step. Each new iterator (each
epoch) starts with a whole batch again, so a loop that never trains
(predicting, exporting) sees whole batches, even over a dataset that trained
before: no rank loses data. Where the pipeline allows, the slice is cut
before the pipeline's per-row maps (_loop_plan.py).
"""
import sys
import threading

import tensorflow as tf
from tensorflow.python.data.ops import iterator_ops

from . import _batch_layout, _input_sharding, _loop_plan, _runtime, _scope

_BATCH_KINDS = ("Batch", "Rebatch")


def _is_batched(dataset):
    """True when the dataset's elements come from a batching transformation
    (batch, padded_batch, ragged_batch..., or matex.data's read of index
    batches) with no unbatch after it."""
    seen = 0
    while dataset is not None and seen < 1000:
        kind = type(dataset).__name__
        if "Unbatch" in kind:
            return False
        if any(k in kind for k in _BATCH_KINDS) or getattr(dataset, "_matex_row_reader", False):
            return True
        inputs = dataset._inputs() if hasattr(dataset, "_inputs") else []
        if not inputs:
            return False
        if len(inputs) > 1:
            return all(_is_batched(d) for d in inputs)
        dataset, seen = inputs[0], seen + 1
    return False


def _called_by_user_code():
    """True when the first caller outside tf.data is not Keras or TensorFlow
    (those iterate datasets for fit, evaluate, predict, distribution)."""
    frame = sys._getframe(2)
    while frame is not None:
        module = frame.f_globals.get("__name__", "")
        if not module.startswith("tensorflow.python.data") and module != __name__:
            return not module.startswith(("keras", "tensorflow", "tf_keras"))
        frame = frame.f_back
    return True


def _slice(element, lo, hi):
    return tf.nest.map_structure(lambda t: t[lo:hi], element)


def _rows(element):
    """The common first dimension of every part of an element, or None."""
    parts = tf.nest.flatten(element)
    if not parts or not all(isinstance(p, (tf.Tensor, tf.RaggedTensor)) and p.shape.rank for p in parts):
        return None
    rows = {int(p.shape[0]) if p.shape[0] is not None else -1 for p in parts}
    return rows.pop() if len(rows) == 1 and -1 not in rows else None


class ShardedIterator(iterator_ops.OwnedIterator):
    """A dataset iterator (checkpointable, usable in tf.function like any) whose
    Python-level next() hands out whole elements until an optimizer update
    happens between two of them, then rank r's contiguous slice of each.
    Where the pipeline allows, the slice is cut before its per-row maps
    (_loop_plan.py: from then on they run for this rank's rows only).
    Inside a tf.function (autograph loops, an iterator passed as argument) it
    is a plain iterator: whole batches, exact. So once handed to a
    tf.function it never cuts, and one that has started cutting cannot be
    handed to one (its cut batches would meet stale layouts there)."""

    def __init__(self, dataset):
        self._matex_plan = _loop_plan.for_loop(dataset, _batch_layout.layout_variables(), self)
        super().__init__(dataset=dataset if self._matex_plan is None else self._matex_plan.dataset)
        self._matex_updates = None
        self._matex_trains = False
        self._matex_in_graph = False

    def _used_in_graph(self):
        if self._matex_plan is not None and self._matex_plan.cutting():
            raise RuntimeError(
                "matex: this dataset iterator is passed to a tf.function after its Python loop trained, so it "
                "hands out this rank's rows only, and the traced step cannot tell. Pass the iterator to the "
                "tf.function from the start (it then gives whole batches), make a new iterator for it, or set "
                "MATEX_INPUT_SHARDING=replicate")
        self._matex_in_graph = True

    @property
    def _type_spec(self):  # asked for when the iterator is passed to a tf.function
        self._used_in_graph()
        return super()._type_spec

    def get_next_as_optional(self):  # AutoGraph's `for x in iterator` inside a tf.function
        if not tf.executing_eagerly():
            self._used_in_graph()
        return super().get_next_as_optional()

    def _trains(self):
        if not self._matex_trains:
            updates = _batch_layout.updates_so_far()
            self._matex_trains = self._matex_updates is not None and updates > self._matex_updates
            self._matex_updates = updates
        return self._matex_trains

    def __next__(self):
        if not tf.executing_eagerly():  # a tf.function that captured the iterator
            self._used_in_graph()
        element = super().__next__()
        _batch_layout.new_element()
        if self._matex_plan is not None and tf.executing_eagerly() and self._matex_plan.last_was_cut():
            # The pipeline cut it and set the layout variables. Outside a training loop that can only be an
            # element restored from a checkpoint of a loop that was training (last_was_cut checks its rank).
            if not self._matex_trains:
                self._matex_trains = True
                self._matex_plan.cut_from_now_on()
            return element
        rows = _rows(element) if tf.executing_eagerly() else None
        variables = _batch_layout.layout_variables()
        if rows is None or not self._trains():
            for variable, (_, value) in zip(variables, _batch_layout.unsliced(rows if rows is not None else 1)):
                variable.assign(value)
            return element
        if self._matex_plan is not None and not self._matex_in_graph:
            self._matex_plan.cut_from_now_on()
        lo, hi = _input_sharding.slice_bounds(rows)  # the rows the plan cuts (_loop_plan.bounds)
        for variable, value in zip(variables, (hi - lo, rows, lo, 1)):
            variable.assign(value)
        return _slice(element, lo, hi)

    def get_next(self):
        return self.__next__()


def _make_dataset_iter(original):
    def __iter__(self):
        if (_runtime.size() == 1 or not tf.executing_eagerly() or tf.distribute.has_strategy()
                or threading.current_thread() is not threading.main_thread()
                or _scope.flag("sharding") or not _called_by_user_code()
                or not _is_batched(self)):
            return original(self)
        return ShardedIterator(self)
    return __iter__


def apply_all(patch):
    patch(tf.data.Dataset, "__iter__", _make_dataset_iter)
