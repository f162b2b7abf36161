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
  of every later element, and so does every later iterator of that dataset.
  A loop that never trains (predicting, exporting) sees whole batches: no
  rank loses data. The layout of the element handed out last lives in three
  variables that traced steps read.
"""
import contextlib
import sys
import threading
import weakref

import tensorflow as tf

from . import _runtime

_state = threading.local()
_optimizers = weakref.WeakSet()  # every optimizer matex has seen apply gradients
_variables = []  # [local, total, offset] once created (eagerly, on first use)


class Layout:
    """local rows here, `total` rows in the global batch, ours start at `offset`."""

    def __init__(self, local, total=None, offset=None):
        self.local = local
        self._total, self._offset = total, offset

    def _gather(self):
        from . import _collectives
        sizes = _collectives.allgather(tf.reshape(tf.cast(self.local, tf.int32), [1]))
        self._total = tf.reduce_sum(sizes)
        self._offset = tf.reduce_sum(sizes[:_runtime.rank()])

    @property
    def total(self):
        if self._total is None:
            self._gather()
        return self._total

    @property
    def offset(self):
        if self._offset is None:
            self._gather()
        return self._offset


@contextlib.contextmanager
def in_fit(local):
    old = getattr(_state, "fit", None)
    _state.fit = Layout(local)
    try:
        yield
    finally:
        _state.fit = old


def _layout_variables():
    if not _variables:
        with tf.init_scope():  # created eagerly, also when first asked for while a step is traced
            _variables.extend(tf.Variable(value, trainable=False, dtype=tf.int32, name=f"matex_batch_{name}")
                              for name, value in (("local", 1), ("total", 1), ("offset", 0)))
    return _variables


def current():
    """The layout of the batch being trained on, or None on one rank."""
    if _runtime.size() == 1:
        return None
    fit = getattr(_state, "fit", None)
    if fit is not None:
        return fit
    local, total, offset = (tf.convert_to_tensor(v) for v in _layout_variables())
    return Layout(local, total, offset)


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


class ShardedIterator:
    """Wraps a dataset iterator: whole elements until an optimizer update
    happens between two of them, then rank r's contiguous slice of each."""

    def __init__(self, dataset, inner):
        self._dataset = weakref.ref(dataset)
        self._inner = inner
        self._updates = None

    def __iter__(self):
        return self

    def __getattr__(self, name):
        return getattr(self._inner, name)

    def get_next(self):
        return self.__next__()

    def _trains(self):
        dataset = self._dataset()
        if dataset is not None and getattr(dataset, "_matex_trains", False):
            return True
        updates = _updates_so_far()
        trains = self._updates is not None and updates > self._updates
        self._updates = updates
        if trains and dataset is not None:
            try:
                dataset._matex_trains = True
            except AttributeError:
                pass
        return trains

    def __next__(self):
        element = next(self._inner)
        rows = _rows(element) if tf.executing_eagerly() else None
        local, total, offset = _layout_variables()
        if rows is None or not self._trains():
            size = rows if rows is not None else 1
            local.assign(size), total.assign(size), offset.assign(0)
            return element
        r, n = _runtime.rank(), _runtime.size()
        lo, hi = rows * r // n, rows * (r + 1) // n
        local.assign(hi - lo), total.assign(rows), offset.assign(lo)
        return _slice(element, lo, hi)


def _make_dataset_iter(original):
    def __iter__(self):
        iterator = original(self)
        if (_runtime.size() == 1 or not tf.executing_eagerly() or tf.distribute.has_strategy()
                or not _called_by_user_code() or not _is_batched(self)):
            return iterator
        return ShardedIterator(self, iterator)
    return __iter__


def apply_all(patch):
    patch(tf.data.Dataset, "__iter__", _make_dataset_iter)
