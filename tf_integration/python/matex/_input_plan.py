"""Exact input sharding: rank r runs a tf.data pipeline's per-row maps only
for its own rows of each global batch, and the global batch keeps the same
elements in the same order as on one process.

A pipeline is read as  S -> M -> batch(B) -> T, walking from its end:
- T, the batch-level suffix: prefetch, options, take, skip, repeat, an
  in-memory cache, assert_cardinality, and Keras' class-weight map (row-wise);
- batch(B) with a constant B and drop_remainder;
- M, the maps of one element right above the batch, as long as they are pure
  (their output depends only on their element, _purity.py); a repeat, take
  or skip among them moves into S (a pure map is one row in, one row out);
- S, everything above: the source, shuffles, interleaves, filters, impure
  maps. S runs in full on every rank, so every rank sees the same rows.

The plan cuts S into windows of B raw elements (one per global batch), keeps
rows [B*r//N, B*(r+1)//N) of each window (skipping buffered raw elements costs
nothing, M has not run on them), runs M on those only, batches them, and puts
T back. The last, partial window gives rank r rows [lo, min(hi, b)): possibly
none. Any contiguous, rank-ordered split is exact for the step
(_batch_layout.Layout gathers the true sizes and offsets).

Keras' NumPy adapter (index batches zipped with the arrays, then a gather) and
matex.data's readers (index batches, then a read) are recognised too: the
index batch is cut before the gather or the read, split by the batch's own
size.

A custom loop's iterator gets the same plans with a switch (_loop_plan.py):
each window or index batch is cut only once the switch is on, and carries its
layout along.

Anything else returns None with the reason, and the caller keeps today's
replicated path (every rank runs the whole pipeline and keeps its slice),
which is exact. Cost of a plan: S on every rank, M on B/N rows per step, one
window dataset per step.
"""
import tensorflow as tf

from . import _purity, _statistical_plan
from ._map_functions import empty_batch, reapplied, rows_of_rank, rows_of_window, share

_SUFFIX_KINDS = ("_PrefetchDataset", "_OptionsDataset", "_TakeDataset", "_SkipDataset", "_RepeatDataset",
                 "_AssertCardinalityDataset", "CacheDataset")
_MAP_KINDS = ("_MapDataset", "_ParallelMapDataset")
_BATCH_KINDS = ("_BatchDataset", "_ParallelBatchDataset")
_SELECTING = ("Filter", "IgnoreErrors", "TakeWhile", "Unique", "Scan")  # which rows survive depends on them
_COMMUTING_KINDS = ("_RepeatDataset", "_TakeDataset", "_SkipDataset")  # with a pure map of one row
_WINDOWS_IN_FLIGHT = 4


class NotPlanned(Exception):
    """Why a pipeline keeps the replicated path; the message names the op."""


def _kind(dataset):
    return type(dataset).__name__


def _input_of(dataset):
    inputs = dataset._inputs() if hasattr(dataset, "_inputs") else []
    return inputs[0] if len(inputs) == 1 else None


def _map_name(dataset):
    func = getattr(getattr(dataset, "_map_func", None), "_func", None)
    return getattr(func, "__qualname__", None) or getattr(func, "__name__", None) or "<map>"


def _is_class_weight_map(dataset):
    return _kind(dataset) in _MAP_KINDS and "make_class_weight_map_fn" in _map_name(dataset)


def _is_keras_array_gather(dataset):
    return (_kind(dataset) in _MAP_KINDS and _map_name(dataset).endswith("slice_inputs.<locals>.grab_batch")
            and _kind(_input_of(dataset) or dataset) == "_ZipDataset")


def _is_row_reader(dataset):
    """matex.data's read map: an index batch in, those rows of the files out."""
    return getattr(dataset, "_matex_row_reader", False) and _kind(dataset) in _MAP_KINDS


def _static(tensor, what, dataset):
    value = tf.get_static_value(tensor)
    if value is None:
        raise NotPlanned(f"{_kind(dataset)}: its {what} is not a constant")
    return value


def _parallelism(dataset):
    calls = getattr(dataset, "_num_parallel_calls", None)
    return None if calls is None else int(_static(calls, "num_parallel_calls", dataset))


def _check_deterministic(dataset):
    if getattr(dataset, "_deterministic", "default") == "false":
        raise NotPlanned(f"{_kind(dataset)} ({_map_name(dataset)}) has deterministic=False: ranks could order "
                         "rows differently")


def _suffix_replayer(node, in_loop):
    """A function that applies the batch-level op `node` again on top of the
    planned dataset. `in_loop`: the plan is for one custom loop's iterator
    (_loop_plan.py), whose elements carry their layout along."""
    kind = _kind(node)
    if kind == "_PrefetchDataset":
        size = tf.get_static_value(node._buffer_size)
        return lambda d: d.prefetch(node._buffer_size if size is None else int(size))
    if kind == "_OptionsDataset":
        return lambda d: d.with_options(node.options())
    if kind == "_TakeDataset":
        return lambda d: d.take(node._count)
    if kind == "_SkipDataset":
        return lambda d: d.skip(node._count)
    if kind == "_RepeatDataset":
        return lambda d: d.repeat(node._count)
    if kind == "_AssertCardinalityDataset":
        return lambda d: d.apply(tf.data.experimental.assert_cardinality(node._expected_cardinality))
    if "Cache" in kind:
        filename = tf.get_static_value(getattr(node, "_filename", tf.constant("")))
        if filename not in (b"", ""):
            raise NotPlanned(f"cache('{filename.decode()}') after the batch: a file cache would need a name per rank")
        if in_loop:
            raise NotPlanned("cache() after the batch, in a custom loop: a cache per loop would map every epoch again")
        return lambda d: d.cache()
    if _is_class_weight_map(node) and not in_loop:
        func = node._map_func._func  # row-wise (a weight per row's class): traced again on the sliced batches
        return lambda d: d.map(func)
    raise NotPlanned(f"{kind} ({_map_name(node)}) after the batch")


def _walk_suffix(dataset, in_loop):
    """(the batch or the NumPy gather, the suffix's replayers, outermost first)."""
    replay = []
    node = dataset
    while (node is not None and _kind(node) not in _BATCH_KINDS and not _is_keras_array_gather(node)
           and not _is_row_reader(node)):
        if _kind(node) in _MAP_KINDS and not _is_class_weight_map(node):
            raise NotPlanned(f"map '{_map_name(node)}' after the batch: it may mix rows of the global batch")
        if _kind(node) not in _SUFFIX_KINDS and not _is_class_weight_map(node):
            if "Batch" in _kind(node):
                raise NotPlanned(f"{_kind(node)}: only batch() with a constant size is sharded")
            raise NotPlanned(f"{_kind(node)} after the batch" if node is not dataset else
                             f"no batch() at the end of the pipeline ({_kind(node)})")
        replay.append(_suffix_replayer(node, in_loop))
        node = _input_of(node)
    if node is None:
        raise NotPlanned("no batch() in the pipeline (a generator of whole batches?)")
    return node, replay


def _walk_maps(batch, statistical):
    """(S, the maps of M from the first to the last, why the walk stopped at an
    impure map or None, whether M holds an impure map: statistical mode only).
    repeat, take and skip between the maps commute with them (a pure map is
    one row in, one row out): they move into S, in their order."""
    maps, moved, impure = [], [], False
    node = _input_of(batch)
    while node is not None:
        kind = _kind(node)
        if kind in _MAP_KINDS:
            _check_deterministic(node)
            reason = _purity.why_impure(node._map_func)
            if reason is not None and not statistical:
                why = f"map '{_map_name(node)}' (before the batch) {reason}"
                return _moved_into(node, moved), maps[::-1], why, impure
            impure = impure or reason is not None
            maps.append(node)
        elif kind in _COMMUTING_KINDS:
            moved.append(_suffix_replayer(node, in_loop=False))
        elif kind not in ("_PrefetchDataset", "_OptionsDataset"):  # no map: S as it is, for the reason
            return (_moved_into(node, moved) if maps else node), maps[::-1], None, impure
        node = _input_of(node)
    raise NotPlanned("the pipeline has no source")


def _moved_into(source, moved):
    """S with the ops that sat between M's maps applied after it, in their order."""
    for apply in reversed(moved):
        source = apply(source)
    return source


def _nothing_to_cut(source):
    """Why a pipeline with no pure map right above its batch stays replicated."""
    kind = _kind(source).strip("_").replace("Dataset", "")
    node = _input_of(source)
    while kind in _SELECTING and node is not None:
        if _kind(node) in _MAP_KINDS:
            return (f"{kind} sits between map '{_map_name(node)}' and the batch: which rows it keeps depends on "
                    "the map, so the map must see every row")
        node = _input_of(node)
    return f"no map right before the batch ({kind} is): nothing to save"


def _check_source(node):
    """Everything above the maps runs on every rank as on one process; it must
    give every rank the same order."""
    seen = 0
    stack = [node]
    while stack and seen < 10000:
        current = stack.pop()
        seen += 1
        _check_deterministic(current)
        stack.extend(current._inputs() if hasattr(current, "_inputs") else [])


def _window_plan(source, maps, impure, batch, rank, size, switch):
    batch_size = int(_static(batch._batch_size, "batch size", batch))
    drop = bool(_static(batch._drop_remainder, "drop_remainder", batch))
    lo, hi = share(batch_size, rank, size)
    parallel = [_parallelism(m) for m in maps]
    if impure:  # statistical mode only (never for a custom loop's switch)
        return _statistical_plan.stream_plan(source, maps, batch_size, drop, (lo, hi), parallel)
    functions = [reapplied(m._map_func)[1] for m in maps]

    def mapped(rows):
        for function, calls in zip(functions, parallel):
            rows = rows.map(function, num_parallel_calls=calls, deterministic=True) if calls else rows.map(function)
        return rows

    def per_window(*window):
        rows = rows_of_window(*window)
        if switch is None:
            first, last, most = lo, hi, max(hi - lo, 1)
        else:  # the window's true size (the last one may be short), known to window()'s datasets
            known = rows.cardinality()
            size = tf.cond(known >= 0, lambda: known,
                           lambda: rows.reduce(tf.constant(0, tf.int64), lambda count, _: count + 1))
            first, last, layout = switch.bounds(size)
            most = batch_size
        mine = mapped(rows.skip(first).take(last - first)).batch(most)
        empty = empty_batch(mine.element_spec)
        if empty is not None:
            nothing = tf.data.Dataset.from_tensors(empty)
        else:  # row shapes known only by running M: one row of the window, mapped, cut to none
            nothing = mapped(rows.take(1)).batch(1).map(lambda *b: tf.nest.map_structure(
                lambda t: t[:0], b[0] if len(b) == 1 else b))
        batch_of_rows = mine.concatenate(nothing).take(1)
        return batch_of_rows if switch is None else switch.tagged(batch_of_rows, layout)

    windows = source.window(batch_size, drop_remainder=drop)
    planned = windows.interleave(per_window, cycle_length=_WINDOWS_IN_FLIGHT, block_length=1,
                                 num_parallel_calls=_WINDOWS_IN_FLIGHT, deterministic=True)
    cardinality = int(windows.cardinality())
    if cardinality >= 0 or cardinality == int(tf.data.INFINITE_CARDINALITY):
        planned = planned.apply(tf.data.experimental.assert_cardinality(cardinality))
    return planned


def _array_plan(gather, rank, size):
    """Keras' NumPy adapter: zip(index batches, the arrays repeated).map(gather)."""
    indices, arrays = gather._input_dataset._datasets
    zipped = tf.data.Dataset.zip((indices.map(lambda i: rows_of_rank(i, rank, size)), arrays))
    return zipped.map(gather._map_func._func, num_parallel_calls=tf.data.AUTOTUNE)


def _reader_plan(reader, rank, size, switch):
    """matex.data: index batches -> read. The index batch is cut before the read."""
    read = reapplied(reader._map_func)[1]
    if switch is None:
        return reader._input_dataset.map(lambda i: rows_of_rank(i, rank, size)).map(read)

    def cut(index):
        first, last, layout = switch.bounds(tf.shape(index, out_type=tf.int64)[0])
        return index[first:last], layout
    return reader._input_dataset.map(cut).map(lambda index, layout: (read(index), layout))


def plan(dataset, rank, size, statistical=False, switch=None):
    """(rank's dataset, None) when the pipeline can be cut before its maps;
    (rank's dataset, what still runs on every rank) when only the pure maps
    below an impure one are cut; (None, why not) otherwise. `statistical`:
    impure maps are cut too (their draws then differ from one process's).
    `switch` (a custom loop's, _loop_plan.py): each batch is cut only once
    the switch is on, and its elements are (batch, layout) pairs."""
    try:
        batch, replay = _walk_suffix(dataset, in_loop=switch is not None)
        stop = None
        if _is_keras_array_gather(batch):
            if switch is not None:
                raise NotPlanned("Keras' NumPy adapter outside fit")
            planned = _array_plan(batch, rank, size)
        elif _is_row_reader(batch):
            planned = _reader_plan(batch, rank, size, switch)
        else:
            source, maps, stop, impure = _walk_maps(batch, statistical and switch is None)
            if not maps:
                return None, stop or _nothing_to_cut(source)
            _check_source(source)
            planned = _window_plan(source, maps, impure, batch, rank, size, switch)
        for apply in reversed(replay):
            planned = apply(planned)
        planned = planned.with_options(dataset.options())  # those set between the maps too
        planned._matex_original = dataset  # keeps the maps' Python functions (py_function) alive
        return planned, stop
    except NotPlanned as reason:
        return None, str(reason)
    except Exception as error:  # noqa: BLE001 - a pipeline matex cannot rebuild keeps the replicated path
        return None, f"matex could not rebuild it ({type(error).__name__}: {str(error).splitlines()[0][:200]})"
