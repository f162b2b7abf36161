"""MATEX_INPUT_SHARDING=statistical across maps that draw random numbers or
keep state: rank r still gets rows [B*r//N, B*(r+1)//N) of each window of B
raw elements (the same rows as the exact plan), but its maps run as one
long-lived pipeline over all its rows, so their random state runs on from
row to row and window to window as on one process (their draws differ from
one process's: statistical, not exact).

Each window contributes this rank's raw rows and one marker (the window's
first row, tagged): the maps run on both, batch(k + 1) then holds exactly
one window's rows plus its marker (every window but the last has k rows of
this rank; the last has at most k), and the marker is dropped. So every
window gives exactly one batch, empty or not, on every rank.
Cost: the source on every rank, the maps on k + 1 rows per window.
Preconditions: B and drop_remainder are constants; the maps' outputs are
dense tensors (the marker is cut off with t[:-1]).
"""
import tensorflow as tf

from ._map_functions import element_of, reapplied, rows_of_window


def stream_plan(source, maps, batch_size, drop, bounds, parallelism):
    """`bounds`: (lo, hi), the rank's rows of each window."""
    lo, hi = bounds
    like = maps[0]._map_func._input_structure
    functions = [reapplied(m._map_func)[0] for m in maps]

    def tagged(*window):
        rows = rows_of_window(*window)
        mine = rows.skip(lo).take(hi - lo).map(lambda *e: (element_of(e, like), tf.constant(False)))
        marker = rows.take(1).map(lambda *e: (element_of(e, like), tf.constant(True)))
        return mine.concatenate(marker)

    stream = source.window(batch_size, drop_remainder=drop).flat_map(tagged)
    for function, calls in zip(functions, parallelism):
        def apply(element, is_marker, function=function):
            return function(element), is_marker
        stream = stream.map(apply, num_parallel_calls=calls, deterministic=True) if calls else stream.map(apply)
    return stream.batch(hi - lo + 1).map(lambda rows, _: tf.nest.map_structure(lambda t: t[:-1], rows))
