"""Which part of the global batch this rank holds, for the patches that need
it: the gradient weighting (local size), BatchNormalization's backward pass
(local size) and Dropout (global size and offset).

- Inside fit the train step knows its slice (_keras_patches shards the data
  adapter's batches): `in_fit(local)` makes a layout whose global size and
  offset come from one allgather of the local sizes, made only if a layer
  asks for them.
- Custom loops (_loop_iterator.py) hand out whole batches until the loop
  trains, then rank r's contiguous slice of each. The layout of the element
  handed out last lives in four variables (local, total, offset, copies)
  that traced steps read; an optimizer update resets them.
"""
import contextlib
import threading
import weakref

import tensorflow as tf

from . import _runtime

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


def layout_variables():
    if not _variables:
        with tf.init_scope():  # created eagerly, also when first asked for while a step is traced
            _variables.extend(tf.Variable(value, trainable=False, dtype=tf.int32, name=f"matex_batch_{name}")
                              for name, value in unsliced(1))
    return _variables


def current():
    """The layout of the batch being trained on, or None on one rank."""
    if _runtime.size() == 1:
        return None
    fit = getattr(_state, "fit", None)
    if fit is not None:
        return fit
    local, total, offset, copies = (tf.convert_to_tensor(v) for v in layout_variables())
    return Layout(local, total, offset, copies)


def unsliced(rows):
    """The layout variables' values when every rank holds all `rows`."""
    return (("local", rows), ("total", rows), ("offset", 0), ("copies", _runtime.size()))


def note_optimizer(optimizer):
    _optimizers.add(optimizer)


def updates_so_far():
    return sum(int(o.iterations.numpy()) for o in list(_optimizers) if getattr(o, "built", True))


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
    for variable, (_, value) in zip(_variables, unsliced(1)):
        variable.assign(value)


_snapshots = weakref.WeakKeyDictionary()  # graph -> the layout its last update trained on
_eager_snapshot = [None]                  # the same for eager updates, until the next element


def new_element():
    """A custom loop handed out its next element: the eager snapshot is used up."""
    _eager_snapshot[0] = None


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
