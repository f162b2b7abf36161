"""Which part of the global batch this rank holds, for the patches that need
it: the gradient weighting (local size), BatchNormalization's backward pass
(local size) and Dropout (global size and offset).

- Inside fit the train step knows its slice (_keras_patches shards the data
  adapter's batches): `in_fit(local)` makes a layout whose global size and
  offset come from one allgather of the local sizes, made only if a layer
  asks for them.
- Custom loops iterate a tf.data dataset from Python. Once an iterator of a
  batched dataset has fed an optimizer update (some optimizer's `iterations`
  grew between two of its elements), it hands out rank r's contiguous slice
  of every later element. Each new iterator (each epoch) starts with a whole
  batch again, so a loop that never trains (predicting, exporting) sees whole
  batches, even over a dataset that trained before: no rank loses data. The
  layout of the element handed out last lives in three variables that traced
  steps read; an optimizer update resets them.
"""
import contextlib
import sys
import threading
import weakref

import tensorflow as tf
from tensorflow.python.data.ops import iterator_ops

from . import _runtime, _scope

_state = threading.local()
_optimizers = weakref.WeakSet()  # every optimizer matex has seen apply gradients
_variables = []  # [local, total, offset, copies] once created (eagerly, on first use)


class Layout:
    """local rows here, `total` rows in the global batch, ours start at
    `offset`; `copies` ranks hold these rows (1 for a slice, every rank when
    each holds the whole batch: a custom loop's first step, a loop that does
    not train, data not sliced)."""

    def __init__(self, local, total=None, offset=None, copies=1):
        self.local, self.copies = local, copies
        self._total, self._offset = total, offset
        self._gathered = {}

    def _gather(self):
        """Global size and offset from one allgather of the local sizes, made
        once per graph that asks (a layer inside a cond or a loop body asks from
        its own graph, whose tensors the step's graph cannot use)."""
        graph = None if tf.executing_eagerly() else tf.compat.v1.get_default_graph()
        if graph not in self._gathered:
            from . import _collectives
            sizes = _collectives.allgather(tf.reshape(tf.cast(self.local, tf.int32), [1]))
            self._gathered[graph] = (tf.reduce_sum(sizes), tf.reduce_sum(sizes[:_runtime.rank()]))
        return self._gathered[graph]

    @property
    def total(self):
        return self._total if self._total is not None else self._gather()[0]

    @property
    def offset(self):
        return self._offset if self._offset is not None else self._gather()[1]


@contextlib.contextmanager
def in_fit(local, total=None, offset=None):
    old = getattr(_state, "fit", None)
    _state.fit = Layout(local, total, offset)
    try:
        yield
    finally:
        _state.fit = old


def in_step():
    """True inside a fit or evaluate step whose layout is set already."""
    return getattr(_state, "fit", None) is not None


def _layout_variables():
    if not _variables:
        with tf.init_scope():  # created eagerly, also when first asked for while a step is traced
            _variables.extend(tf.Variable(value, trainable=False, dtype=tf.int32, name=f"matex_batch_{name}")
                              for name, value in _unsliced(1))
    return _variables


def current():
    """The layout of the batch being trained on, or None on one rank."""
    if _runtime.size() == 1:
        return None
    fit = getattr(_state, "fit", None)
    if fit is not None:
        return fit
    local, total, offset, copies = (tf.convert_to_tensor(v) for v in _layout_variables())
    return Layout(local, total, offset, copies)


def _unsliced(rows):
    """The layout variables' values when every rank holds all `rows`."""
    return (("local", rows), ("total", rows), ("offset", 0), ("copies", _runtime.size()))


def note_optimizer(optimizer):
    _optimizers.add(optimizer)


def _updates_so_far():
    return sum(int(o.iterations.numpy()) for o in list(_optimizers) if getattr(o, "built", True))


# ---- sharded iteration in custom loops -------------------------------------------------------------------

_BATCH_KINDS = ("Batch", "Rebatch")


def _is_batched(dataset):
    """True when the dataset's elements come from a batching transformation
    (batch, padded_batch, ragged_batch...) with no unbatch after it."""
    seen = 0
    while dataset is not None and seen < 1000:
        kind = type(dataset).__name__
        if "Unbatch" in kind:
            return False
        if any(k in kind for k in _BATCH_KINDS):
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
    Inside a tf.function (autograph loops, an iterator passed as argument) it
    is a plain iterator: whole batches, exact."""

    def __init__(self, dataset):
        super().__init__(dataset=dataset)
        self._matex_updates = None
        self._matex_trains = False

    def _trains(self):
        if not self._matex_trains:
            updates = _updates_so_far()
            self._matex_trains = self._matex_updates is not None and updates > self._matex_updates
            self._matex_updates = updates
        return self._matex_trains

    def __next__(self):
        element = super().__next__()
        _eager_snapshot[0] = None
        rows = _rows(element) if tf.executing_eagerly() else None
        variables = _layout_variables()
        if rows is None or not self._trains():
            for variable, (_, value) in zip(variables, _unsliced(rows if rows is not None else 1)):
                variable.assign(value)
            return element
        r, n = _runtime.rank(), _runtime.size()
        lo, hi = rows * r // n, rows * (r + 1) // n
        for variable, value in zip(variables, (hi - lo, rows, lo, 1)):
            variable.assign(value)
        return _slice(element, lo, hi)

    def get_next(self):
        return self.__next__()


def reset_after_update():
    """After an optimizer update the batch it came from is used up: later
    steps that do not come from a sliced iterator (NumPy batches, say) must not
    read its layout. What the step does after its update (a metric's
    update_state) still needs it: the layout as read before the reset is kept
    for the rest of the trace (or, eagerly, until the next element)."""
    if not _variables:
        return
    snapshot = Layout(*(tf.identity(tf.convert_to_tensor(v)) for v in _variables))  # read before the reset
    if tf.executing_eagerly():
        _eager_snapshot[0] = _eager_snapshot[0] or snapshot
    else:
        # The first update of the step: a second optimizer's (a GAN's) must not snapshot the reset values.
        _snapshots.setdefault(tf.compat.v1.get_default_graph(), snapshot)
    for variable, (_, value) in zip(_variables, _unsliced(1)):
        variable.assign(value)


_snapshots = weakref.WeakKeyDictionary()  # graph -> the layout its last update trained on
_eager_snapshot = [None]                  # the same for eager updates, until the next element


def of_last_step(eager_too=False):
    """The layout of the batch the step in progress trains on: the one read
    before its first optimizer update reset the variables, when it has made
    one (in this graph or one it is nested in), else current(). Eagerly there
    is no step to tell: current(), unless `eager_too` (a metric updated after
    the update), which takes the snapshot until the next element."""
    if _runtime.size() == 1:
        return None
    if getattr(_state, "fit", None) is not None:
        return _state.fit
    graph = None if tf.executing_eagerly() else tf.compat.v1.get_default_graph()
    if graph is None:
        return (_eager_snapshot[0] if eager_too else None) or current()
    while graph is not None:
        if graph in _snapshots:
            return _snapshots[graph]
        graph = getattr(graph, "outer_graph", None)
    return current()


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
