"""The ranks' gradients made the global batch's, before an optimizer applies
them (MATEX_ENABLE=1, 2+ ranks; called by the optimizers' patched apply).

A rank's gradient comes in one of two forms:
- the gradient of a mean over the rank's n_r rows (Keras' losses, the
  script's own mean): weighted, sum of n_r * g_r over the sum of n_r, which is
  the gradient of the global batch's mean loss with uneven slices too. One
  grouped allreduce of the n_r * g_r and n_r. A rank whose slice is empty
  adds zeros (multiply_no_nan).
- the rank's contribution to the global batch's loss: the optimizer scaled
  the loss by n_r / B (_loss_patches.scale_loss; loss scaling needs every
  example's gradient at one process's magnitude all the way back, or float16
  overflows in other steps). Summed, not weighted.

When every rank holds the whole batch (a custom loop's first step, copies >
1), no loss was scaled: the n_r are equal and the weighted mean is the
gradient every rank computed.

Sparse gradients (tf.IndexedSlices, an Embedding's) stay sparse, with one
process's slices: Keras' Adam squares each slice before adding them, so a
dense sum, or slices in other groups, would change its second moment.
- Indices that come from the batch's values (token ids): every rank's slices
  are gathered in rank order, which is the batch's order, duplicate indices
  included.
- Indices that do not (positions 0..L-1, one lookup for the whole batch):
  every rank holds the same indices, each slice a sum over its rows; the
  values are reduced like a dense gradient.
Which of the two is read from the traced step's graph: the indices are
shared when everything they are computed from is a constant, a variable's
value or a shape. Eagerly there is no graph: the slices are gathered. With
copies > 1 the local slices are kept. In a step that XLA compiles they are
made dense, as before: an XLA allgather needs the same rows on every rank.
"""
import weakref

import tensorflow as tf

from . import _batch_layout, _collectives, _half_gradients

# optimizer -> the graphs (None: eagerly) whose loss it scaled to the rank's contribution
_contributions = weakref.WeakKeyDictionary()


def current_graph():
    """The graph ops go to now, or None eagerly."""
    return None if tf.executing_eagerly() else tf.compat.v1.get_default_graph()


def _graph_chain(eager_outside=False):
    """The traced graphs the current one is nested in, innermost first; with
    eager_outside, then None for the eager code around them (a traced model
    called from an eager step)."""
    from tensorflow.python.framework import func_graph
    graph = current_graph()
    while isinstance(graph, func_graph.FuncGraph):
        yield graph
        graph = graph.outer_graph
    if eager_outside:
        yield None


def note_contribution(optimizer):
    """optimizer.scale_loss made this step's loss the rank's contribution."""
    _contributions.setdefault(optimizer, set()).add(current_graph())


def contribution_in_step():
    """Whether some optimizer scaled this step's loss to the rank's
    contribution (BatchNormalization's backward pass asks, before the update)."""
    chain = set(_graph_chain(eager_outside=True))
    return any(graphs & chain for graphs in list(_contributions.values()))


def _take_contribution(optimizer):
    """Whether this step's loss was scaled to the rank's contribution by
    `optimizer` (in this graph or one it is nested in; eagerly, once)."""
    graphs = _contributions.get(optimizer)
    if not graphs:
        return False
    if current_graph() is None:
        found = None in graphs
        graphs.discard(None)
        return found
    return any(graph in graphs for graph in _graph_chain())


def _is_one(value):
    return isinstance(value, int) and value == 1


def reduce(grads, optimizer=None):
    """grads (a list, None entries kept) reduced across ranks."""
    present = [i for i, g in enumerate(grads) if g is not None]
    if not present:
        return list(grads)
    layout = _batch_layout.of_last_step()
    contribution = optimizer is not None and _take_contribution(optimizer)
    slices = [i for i in present if isinstance(grads[i], tf.IndexedSlices) and not _in_xla()]
    sparse = [i for i in slices if _indices_from_batch(grads[i].indices)]
    shared = [i for i in slices if i not in sparse]
    dense = [i for i in present if i not in slices]
    out = list(grads)
    copies = layout.copies
    weight = rank_weight(layout, contribution)
    reduced = dense + shared
    weighted = [tf.math.multiply_no_nan(_values(grads[i]), tf.cast(weight, grads[i].dtype)) for i in reduced]
    summed = _collectives.allreduce(weighted + [tf.reshape(weight, [1])], op="sum")
    total = summed[-1][0]
    if contribution:
        total = tf.constant(1.0) if _is_one(copies) else tf.where(tf.equal(copies, 1), 1.0, total)
    for i, r in zip(reduced, summed[:-1]):
        r = r / tf.cast(total, r.dtype)
        out[i] = _in_source_precision(r, grads[i]) if i in dense else _with_values(grads[i], r, copies)
    for i in sparse:
        out[i] = _gathered(grads[i], weight, total, copies)
    return out


def rank_weight(layout, contribution):
    """A rank's weight in the reduction: its rows n_r (a mean over them); for
    a contribution 1 where the batch is sliced (0 for an empty slice, which
    adds nothing) and n_r where every rank holds the whole batch (copies >
    1: the loss was not scaled, the copies are averaged)."""
    n = tf.cast(layout.local, tf.float32)
    if not contribution:
        return n
    contributes = tf.minimum(n, 1.0)
    return contributes if _is_one(layout.copies) else tf.where(tf.equal(layout.copies, 1), contributes, n)


def _in_xla():
    """In a step XLA compiles, where an allgather needs the same rows on every rank."""
    from tensorflow.python.ops import control_flow_util
    graph = current_graph()
    return graph is not None and control_flow_util.GraphOrParentsInXlaContext(graph)


def _values(grad):
    if isinstance(grad, tf.IndexedSlices):
        return grad.values
    wide = _half_gradients.wide_partial(grad)  # a 16-bit layer's partial sum, before its rounding
    return wide if wide is not None else tf.convert_to_tensor(grad)


def _with_values(slices, values, copies):
    """Shared indices: the reduced values on this rank's own indices (with
    copies > 1 every rank computed them all: its own values)."""
    if not _is_one(copies):
        values = tf.cond(tf.greater(copies, 1), lambda: tf.identity(slices.values), lambda: values)
    return tf.IndexedSlices(values, slices.indices, slices.dense_shape)


# Ops whose output does not depend on the data: where indices come only from them (and shapes), every
# rank holds the same ones.
_DATA_FREE = ("Const", "VarHandleOp", "ReadVariableOp", "Shape", "ShapeN", "Size", "Rank")


def _indices_from_batch(indices):
    """Whether sparse indices may depend on the step's data (token ids from
    the batch, from an iterator read in the step): yes unless every input
    they are computed from is a constant, a variable's value or a shape
    (positions 0..L-1 from tf.range), and their number is fixed when the step
    is traced (a shape can be the rank's rows). Eagerly: assumed. Gathering is right
    either way for the sum; only the slices Adam sees differ for shared
    indices."""
    if tf.executing_eagerly() or not hasattr(indices, "op") or not indices.shape.is_fully_defined():
        return True  # a count that is not fixed may be the rank's rows (tf.zeros(tf.shape(ids)))
    seen, pending = set(), [indices]
    while pending:
        tensor = pending.pop()
        if tensor.ref() in seen:
            continue
        seen.add(tensor.ref())
        op = tensor.op
        if op.type in _DATA_FREE:
            continue
        if not op.inputs or any(t.dtype == tf.resource for t in op.inputs):
            return True  # the step's data, an iterator's next element, a captured value: not provably shared
        pending.extend(op.inputs)
    return False


def _in_source_precision(reduced, grad):
    """A gradient that a 16-bit computation produced (a mixed-precision
    layer's: a cast to the variable's dtype in a traced step) is rounded to
    that precision once, after the sum of the ranks' float32 partial sums
    (_half_gradients.py), as one process rounds its sum."""
    op = getattr(grad, "op", None)
    if op is None or tf.executing_eagerly() or op.type != "Cast" or not op.inputs:
        return reduced
    source = op.inputs[0].dtype
    if source not in (tf.float16, tf.bfloat16):
        return reduced
    return tf.cast(tf.cast(reduced, source), reduced.dtype)


def _gathered(slices, weight, total, copies):
    """Every rank's rows of an IndexedSlices gradient, in rank order, each
    weighted and divided by the total weight; copies > 1 keeps its own."""
    values = tf.math.multiply_no_nan(slices.values, tf.cast(weight, slices.values.dtype))
    all_values = _collectives.allgather(values) / tf.cast(total, values.dtype)
    all_indices = _collectives.allgather(slices.indices)
    if _is_one(copies):
        return tf.IndexedSlices(all_values, all_indices, slices.dense_shape)
    keep_own = tf.greater(copies, 1)
    values = tf.cond(keep_own, lambda: tf.identity(slices.values), lambda: all_values)
    indices = tf.cond(keep_own, lambda: tf.identity(slices.indices), lambda: all_indices)
    return tf.IndexedSlices(values, indices, slices.dense_shape)
