"""TensorFlow-facing collectives: allreduce (grouped), broadcast, allgather.

Every rank must call them in the same order: a tensor is matched across ranks
by its name, which is the `name` given here or else one drawn from a counter
of its process set (so that sets whose ranks make different numbers of calls
do not shift each other's names). Eager calls (and TF1 graphs) draw from a
process-wide counter per set. A call traced
in a tf.function draws from a counter of that trace, named after the
function: a function that one rank retraces (its slice of the batch has a new
shape) and another does not still names its collectives alike on both. Calls
run asynchronously in the engine; TensorFlow keeps working meanwhile.
"""
import itertools
import re
import threading
import weakref

import tensorflow as tf
from tensorflow.python.framework import func_graph

from . import _runtime

_REDUCE_OPS = ("sum", "average", "min", "max", "product")
_counters = {}  # process_set_id -> the eager calls' counter
_trace_counters = weakref.WeakKeyDictionary()  # outermost FuncGraph of a trace -> {process_set_id: its counter}
_counter_lock = threading.Lock()


def _outermost_trace():
    graph = None if tf.executing_eagerly() else tf.compat.v1.get_default_graph()
    top = None
    while isinstance(graph, func_graph.FuncGraph):
        top, graph = graph, graph.outer_graph
    return top


def _name(kind, name, process_set_id=0):
    if name:
        return name
    trace = _outermost_trace()
    in_set = f"set{process_set_id}." if process_set_id else ""
    with _counter_lock:
        if trace is None:
            return f"matex.{kind}.{in_set}{next(_counters.setdefault(process_set_id, itertools.count()))}"
        counter = _trace_counters.setdefault(trace, {}).setdefault(process_set_id, itertools.count())
        # Digits dropped: a generated graph name (__backward_f_1234) carries ids that differ between ranks.
        return f"matex.{kind}.{in_set}{re.sub(r'[0-9]+', '', trace.name)}.{next(counter)}"


def allreduce(tensors, op="average", prescale=1.0, postscale=1.0, name=None, process_set_id=0):
    """Element-wise reduction across ranks of a tensor or a list of tensors.

    A list is submitted as one group per dtype (the engine may fuse them).
    op: "average" (default), "sum", "min", "max" or "product".
    process_set_id: the ranks that take part (0: all; _runtime.add_process_set).
    """
    if op not in _REDUCE_OPS:
        raise ValueError(f"matex.allreduce: op must be one of {_REDUCE_OPS}, not {op!r}")
    single = not isinstance(tensors, (list, tuple))
    items = [tf.convert_to_tensor(t) for t in ([tensors] if single else tensors)]
    base = _name("allreduce", name, process_set_id)
    by_dtype = {}
    for index, t in enumerate(items):
        by_dtype.setdefault(t.dtype, []).append(index)
    results = [None] * len(items)
    for group, (dtype, indices) in enumerate(by_dtype.items()):
        group_name = base if len(by_dtype) == 1 else f"{base}.{dtype.name}"
        reduced = _runtime.ops().matex_allreduce(
            [items[i] for i in indices], reduce_op=op, prescale=float(prescale), postscale=float(postscale),
            tensor_name=group_name, process_set_id=int(process_set_id))
        for i, r in zip(indices, reduced):
            results[i] = r
    return results[0] if single else results


def broadcast(tensor, root_rank=0, name=None, process_set_id=0):
    """root_rank's tensor, on every rank (root_rank counted within the process set)."""
    return _runtime.ops().matex_broadcast(tf.convert_to_tensor(tensor), root_rank=int(root_rank),
                                          tensor_name=_name("broadcast", name, process_set_id), process_set_id=int(process_set_id))


def allgather(tensor, name=None, process_set_id=0):
    """Every rank's tensor concatenated along the first dimension, in rank order
    (the first dimension may differ between ranks)."""
    return _runtime.ops().matex_allgather(tf.convert_to_tensor(tensor), tensor_name=_name("allgather", name, process_set_id),
                                          process_set_id=int(process_set_id))


def first_difference_from_rank0(values, dtype):
    """Eagerly gathers every rank's list of values (lengths may differ) and
    returns (rank, index, its length, rank 0's length) for the first rank
    whose list differs from rank 0's, index being the first position where it
    does (the shorter length when one list is a prefix of the other), or None
    when all agree. Two small allgathers."""
    counts = allgather(tf.constant([len(values)], tf.int32)).numpy().tolist()
    everyone = allgather(tf.constant(values, dtype, shape=[len(values)])).numpy().tolist()
    lists, start = [], 0
    for count in counts:
        lists.append(everyone[start:start + count])
        start += count
    reference = lists[0]
    for rank, theirs in enumerate(lists[1:], start=1):
        if theirs != reference:
            index = next((i for i, (a, b) in enumerate(zip(theirs, reference)) if a != b),
                         min(len(theirs), len(reference)))
            return rank, index, len(theirs), len(reference)
    return None


@tf.RegisterGradient("MatexAllreduce")
def _allreduce_gradient(op, *grads):
    # Every rank's output depends on every rank's input with the same weights,
    # so the gradient is the same reduction of the incoming gradients.
    reduce_op = op.get_attr("reduce_op").decode()
    if reduce_op not in ("sum", "average"):
        raise NotImplementedError(f"matex: no gradient for allreduce with op {reduce_op!r}")
    grads = [tf.zeros_like(x) if g is None else g for g, x in zip(grads, op.inputs)]
    return _runtime.ops().matex_allreduce(
        grads, reduce_op=reduce_op, prescale=op.get_attr("prescale"), postscale=op.get_attr("postscale"),
        tensor_name=_name("allreduce.grad", None, op.get_attr("process_set_id")),
        process_set_id=op.get_attr("process_set_id"))  # fresh: two gradients through one op must not share a name
