"""Exact input sharding for custom loops: one iterator's pipeline whose
per-row maps run only for this rank's rows once the loop trains.

A custom loop's iterator (_loop_iterator.ShardedIterator) hands out whole
batches until an optimizer update happens between two of its elements, then
rank r's contiguous share of each. This plan lets the pipeline itself make
that cut, so that the maps before the batch (_input_plan.py) run for the
rank's rows only:

- the plan is _input_plan's, built for this iterator, with a switch: a
  variable that the iterator turns on (never off) when the loop trains;
- each window (global batch) reads the switch when tf.data starts on it:
  off, it maps and batches every row; on, rows share(b, r, N) of its b rows,
  the same rows the iterator would slice out of a whole batch;
- each batch travels with its layout (cut or not, local rows, global rows,
  offset, copies, and the rank and world size that cut it); the last op of
  the pipeline, run as the iterator's next()
  asks for that batch, writes it into the layout variables that the traced
  steps read, and into this plan's `last` variable for the iterator.

Batches that tf.data had started before the switch came on (the first one,
those in the interleave's cycle, the prefetch buffers) come whole and are
sliced by the iterator as before: the rows are the same either way. So a
loop's map calls per rank are its share of every batch plus, once per
iterator, the batches already in flight. Every new iterator starts with the
switch off (an epoch starts whole again), so a loop that never trains sees
every row.
A checkpoint of such an iterator holds the batches tf.data had buffered, cut
for this rank: it restores on the rank that wrote it, at the same world size
(another rank or size gets an error naming both).
Cost: one plan (a few traced functions) per dataset, made again only for a
second iterator alive at once; one count of each window's raw rows; one
variable read per element.
Preconditions: as _input_plan's exact plans; no cache() after the batch (a
cache per iterator would map again every epoch), and more batches than
tf.data keeps in flight (_SMALL): other pipelines keep the iterator's
slicing of whole batches.
"""
import weakref

import tensorflow as tf

from . import _input_plan, _input_sharding, _runtime
from ._map_functions import element_of

_FIELDS = 7  # cut, local, total, offset, copies, rank, size
_SMALL = 16  # batches: about what tf.data holds in flight at the switch (first, cycle, buffers)


class LoopPlan:
    """A dataset's switchable plan, for one live iterator at a time: `dataset`,
    the switch, and the layout of the batch handed out last."""

    def __init__(self, dataset, layout_variables):
        self._layout_variables = layout_variables
        with tf.init_scope(), tf.device("/cpu:0"):  # read and written by tf.data, on the host
            self.switch = tf.Variable(0, trainable=False, dtype=tf.int64, name="matex_loop_cut")
            self.last = tf.Variable(tf.zeros([_FIELDS], tf.int32), trainable=False, name="matex_loop_layout")
        planned, why = _input_plan.plan(dataset, _runtime.rank(), _runtime.size(), switch=self)
        _input_sharding.explain(planned, why, in_loop=True)
        self.dataset = None if planned is None else self._handing_out(planned, dataset)

    def bounds(self, rows):
        """(first, last, layout) of a batch of `rows` rows, by the switch as it is now."""
        on = tf.cast(self.switch.read_value() > 0, tf.int64)
        lo, hi = _input_sharding.slice_bounds(rows)  # the rows the iterator slices from a whole batch
        first, last = on * lo, on * hi + (1 - on) * rows
        rank, size = _runtime.rank(), _runtime.size()
        copies = on + (1 - on) * size
        return first, last, tf.cast(tf.stack([on, last - first, rows, first, copies, rank, size]), tf.int32)

    @staticmethod
    def tagged(batches, layout):
        like = batches.element_spec
        return batches.map(lambda *b: (element_of(b, like), layout))

    def _handing_out(self, planned, original):
        """The batches alone, each writing its layout as next() takes it: a
        map with nothing after it (no prefetch tf.data could inject), so it
        runs when the batch is asked for, in order. The switch and the layout
        variables are not saved with the iterator (external state ignored),
        unless the script's own pipeline has external state: its checkpoint
        then fails as the script's would."""
        def hand_out(batch, layout):
            writes = [self.last.assign(layout)]
            writes += [v.assign(layout[i + 1]) for i, v in enumerate(self._layout_variables)]  # local..copies
            with tf.control_dependencies(writes):
                return tf.nest.map_structure(tf.identity, batch)
        options = tf.data.Options()
        options.experimental_optimization.inject_prefetch = False
        if original.options().experimental_external_state_policy is None and not _has_external_state(original):
            options.experimental_external_state_policy = tf.data.experimental.ExternalStatePolicy.IGNORE
        return _input_sharding.within_budget(planned.map(hand_out).with_options(options))

    def last_was_cut(self):
        cut, *_, rank, size = (int(v) for v in self.last.numpy())
        if cut and (rank, size) != (_runtime.rank(), _runtime.size()):
            raise RuntimeError(
                f"matex: this dataset iterator was restored from a checkpoint that rank {rank} of {size} wrote "
                f"while its loop trained; its buffered batches hold that rank's rows, not those of rank "
                f"{_runtime.rank()} of {_runtime.size()}. Save and restore the iterator on every rank (one "
                "checkpoint per rank), or set MATEX_INPUT_SHARDING=replicate")
        return bool(cut)

    def cut_from_now_on(self):
        self.switch.assign(1)

    def cutting(self):
        with tf.init_scope():  # also asked while a tf.function that uses the iterator is traced
            return bool(self.switch.numpy())


def _has_external_state(dataset):
    """Whether checkpointing an iterator of `dataset` fails by TF's default
    policy (a py_function, a stateful op in a map): it must fail alike here.
    Asked once per dataset (serializing it copies its constants)."""
    known = getattr(dataset, "_matex_external_state", None)
    if known is None:
        try:
            tf.raw_ops.DatasetToGraphV2(input_dataset=dataset._variant_tensor,
                                        external_state_policy=tf.data.experimental.ExternalStatePolicy.FAIL.value)
            known = False
        except tf.errors.OpError:
            known = True
        try:
            dataset._matex_external_state = known
        except AttributeError:
            pass
    return known


def for_loop(dataset, layout_variables, owner):
    """A LoopPlan for `owner`, a new iterator of `dataset`, or None (replicate
    mode, or a pipeline with nothing to cut: the iterator slices whole
    batches). The plan of the dataset's previous iterator is used again, its
    switch off, once that iterator is gone (an epoch's loop has ended)."""
    if _runtime.config("MATEX_INPUT_SHARDING") == "replicate" or getattr(dataset, "_matex_loop_unplanned", False):
        return None
    batches = int(dataset.cardinality())
    if 0 <= batches <= _SMALL:
        return None  # every batch would be in flight before the loop's first update: nothing to cut
    previous = getattr(dataset, "_matex_loop_plan", None)  # (plan, a weak reference to its iterator)
    if previous is not None and previous[1]() is None:
        previous[0].switch.assign(0)
        dataset._matex_loop_plan = (previous[0], weakref.ref(owner))
        return previous[0]
    try:
        plan = LoopPlan(dataset, layout_variables)
    except Exception as error:  # noqa: BLE001 - a pipeline matex cannot rebuild keeps the Python slicing
        _input_sharding.explain(None, f"matex could not rebuild it ({type(error).__name__}: "
                                      f"{str(error).splitlines()[0][:200] if str(error) else ''})", in_loop=True)
        plan = None
    if plan is not None and plan.dataset is not None:
        if previous is None:
            try:
                dataset._matex_loop_plan = (plan, weakref.ref(owner))
            except AttributeError:
                pass
        return plan
    try:
        dataset._matex_loop_unplanned = True  # its next iterators need not walk it again
    except AttributeError:
        pass
    return None
