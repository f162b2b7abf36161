"""horovod.tensorflow's collectives over matex's TensorFlow ops
(matex/_collectives.py): allreduce, broadcast and allgather are matex ops,
eager and inside tf.function, run by the engine. All-to-all and
reduce-scatter are built from them in the graph: all-to-all gathers every
rank's tensor and keeps the rows sent to this rank (N times the traffic of a
native all-to-all); reduce-scatter allreduces and keeps this rank's rows
(twice the traffic). docs/horovod.md lists these costs.
"""
import contextlib

import numpy as np
import tensorflow as tf

from ..common import objects, process_sets
from ..common import reduce_ops as _ops
from ..common.refusals import refuse
from .compression import Compression
from .runtime import runtime

Average, Sum, Adasum, Min, Max, Product = (_ops.Average, _ops.Sum, _ops.Adasum, _ops.Min, _ops.Max,
                                          _ops.Product)


def _collectives():
    from matex import _collectives
    return _collectives


def _require(who):
    if not runtime.started:
        raise ValueError(f"Horovod has not been initialized; use hvd.init() (served by matex; {who})")


class _Group:
    """The ranks a call runs over: the job's, or a registered process set's
    (this rank among them). id goes to the ops as their process_set_id; rank
    and size are this rank's place in the group and its number of ranks."""

    def __init__(self, process_set, who):
        _require(who)
        handle = process_sets.check(process_set, who)
        self.who = who
        if handle is None:
            self.id, self.rank, self.size, self.members = 0, runtime.rank, runtime.size, None
        else:
            self.id, self.rank, self.size, self.members = (handle.process_set_id, handle.rank, handle.size,
                                                           handle.members)

    def root(self, root_rank):
        """A global root rank as the ops count it: within the set. Outside the
        job it goes to the op as it is, which fails on every rank naming it."""
        _check_root(root_rank, self.who)
        if self.members is None:
            return int(root_rank)
        if int(root_rank) not in self.members:
            raise ValueError(f"horovod.tensorflow.{self.who}: root_rank={int(root_rank)} is not in the process set "
                             f"(ranks {self.members})")
        return self.members.index(int(root_rank))


def _scoped(name, ignore_name_scope):
    """Horovod prefixes a given name with the current name scope (in graphs)."""
    if name is None or ignore_name_scope or tf.executing_eagerly():
        return name
    scope = tf.compat.v1.get_default_graph().get_name_scope()
    return f"{scope}/{name}" if scope else name


def _check_root(root_rank, who):
    """A root_rank that is not an integer is an error here. An integer
    outside the job goes to the op, which fails on every rank, quoting it (a
    root that one rank alone gets wrong must not leave the others waiting)."""
    _require(who)
    if isinstance(root_rank, bool) or not hasattr(root_rank, "__index__"):
        raise ValueError(f"horovod.tensorflow.{who}: root_rank={root_rank!r} is not an integer")


def _sparse_allreduce(slices, op, prescale_factor, postscale_factor, name, group):
    if op not in ("average", "sum"):
        refuse(f"allreduce of tf.IndexedSlices with op {op!r}", "only Sum and Average are served for sparse "
               "gradients (or pass sparse_as_dense=True)")
    if prescale_factor != 1.0 or postscale_factor != 1.0:
        refuse("allreduce of tf.IndexedSlices with prescale_factor or postscale_factor",
               "pass sparse_as_dense=True")
    values = _collectives().allgather(slices.values, name=None if name is None else f"{name}.values",
                                      process_set_id=group.id)
    indices = _collectives().allgather(slices.indices, name=None if name is None else f"{name}.indices",
                                       process_set_id=group.id)
    if op == "average":
        values = values / tf.cast(group.size, values.dtype)
    return tf.IndexedSlices(values, indices, dense_shape=slices.dense_shape)


def _scales_integers(tensor, op, prescale_factor, postscale_factor):
    return tensor.dtype.is_integer and (op == "average" or prescale_factor != 1.0 or postscale_factor != 1.0)


def _integer_allreduce(tensor, op, prescale_factor, postscale_factor, name, group):
    """An integer tensor averaged or scaled as Horovod does: each factor
    applied in float64 and truncated toward zero, the prescale before the
    sum, the postscale (divided by the number of ranks for Average) after."""
    if prescale_factor != 1.0:
        tensor = tf.cast(tf.cast(tensor, tf.float64) * prescale_factor, tensor.dtype)
    summed = _collectives().allreduce(tensor, op="sum", name=name, process_set_id=group.id)
    factor = postscale_factor / group.size if op == "average" else postscale_factor
    return summed if factor == 1.0 else tf.cast(tf.cast(summed, tf.float64) * factor, tensor.dtype)


def allreduce(tensor, average=None, device_dense="", device_sparse="", compression=Compression.none, op=None,
              prescale_factor=1.0, postscale_factor=1.0, name=None, process_set=process_sets.global_process_set,
              ignore_name_scope=False):
    """tensor reduced across ranks (op Average by default); tf.IndexedSlices
    are gathered (values and indices), as Horovod does."""
    group = _Group(process_set, "allreduce")
    reduce_op = _ops.resolve(op, average, "allreduce")
    name = _scoped(name, ignore_name_scope)
    if isinstance(tensor, tf.IndexedSlices):
        return _sparse_allreduce(tensor, reduce_op, prescale_factor, postscale_factor, name, group)
    compressed, context = compression.compress(tf.convert_to_tensor(tensor))
    if _scales_integers(compressed, reduce_op, prescale_factor, postscale_factor):
        return _integer_allreduce(compressed, reduce_op, prescale_factor, postscale_factor, name, group)
    reduced = _collectives().allreduce(compressed, op=reduce_op, prescale=prescale_factor,
                                       postscale=postscale_factor, name=name, process_set_id=group.id)
    return compression.decompress(reduced, context)


def grouped_allreduce(tensors, average=None, device_dense="", device_sparse="", compression=Compression.none,
                      op=None, prescale_factor=1.0, postscale_factor=1.0, process_set=process_sets.global_process_set,
                      ignore_name_scope=False, name=None):
    """Several tensors reduced in one submission (the engine may fuse them)."""
    group = _Group(process_set, "grouped_allreduce")
    reduce_op = _ops.resolve(op, average, "grouped_allreduce")
    name = _scoped(name, ignore_name_scope)
    tensors = list(tensors)
    results = [None] * len(tensors)
    dense, packed = [], []
    for index, tensor in enumerate(tensors):
        if isinstance(tensor, tf.IndexedSlices):
            results[index] = _sparse_allreduce(tensor, reduce_op, prescale_factor, postscale_factor,
                                               None if name is None else f"{name}.{index}", group)
        elif _scales_integers(tf.convert_to_tensor(tensor), reduce_op, prescale_factor, postscale_factor):
            results[index] = _integer_allreduce(tf.convert_to_tensor(tensor), reduce_op, prescale_factor,
                                                postscale_factor, None if name is None else f"{name}.{index}", group)
        else:
            dense.append(index)
            packed.append(compression.compress(tf.convert_to_tensor(tensor)))
    if dense:
        reduced = _collectives().allreduce([c for c, _ in packed], op=reduce_op, prescale=prescale_factor,
                                           postscale=postscale_factor, name=name, process_set_id=group.id)
        for index, value, (_, context) in zip(dense, reduced, packed):
            results[index] = compression.decompress(value, context)
    return results


def allgather(tensor, name=None, ignore_name_scope=False, process_set=process_sets.global_process_set):
    """Every rank's tensor concatenated along dimension 0 (which may differ between ranks)."""
    group = _Group(process_set, "allgather")
    tensor = tf.convert_to_tensor(tensor)  # a scalar fails in the op, on every rank
    name = _scoped(name, ignore_name_scope)
    if not tensor.dtype.is_floating:
        return _collectives().allgather(tensor, name=name, process_set_id=group.id)

    @tf.custom_gradient
    def gather(x):
        def grad(dy):
            # Horovod 0.28's allgather gradient: this rank's rows of the gradient averaged across ranks.
            averaged = _collectives().allreduce(dy, op="average", name=_derived(name, "grad"),
                                                process_set_id=group.id)
            rows = tf.shape(x, out_type=tf.int64)[:1]
            counts = tf.reshape(_collectives().allgather(rows, name=_derived(name, "grad.rows"),
                                                         process_set_id=group.id), [-1])
            start = tf.reduce_sum(counts[:group.rank])
            return averaged[start:start + rows[0]]
        return _collectives().allgather(x, name=name, process_set_id=group.id), grad
    return gather(tensor)


def _derived(name, suffix):
    return None if name is None else f"{name}.{suffix}"


def grouped_allgather(tensors, name=None, ignore_name_scope=False, process_set=process_sets.global_process_set):
    name = _scoped(name, ignore_name_scope)
    return [allgather(t, None if name is None else f"{name}.{i}", True, process_set) for i, t in enumerate(tensors)]


def broadcast(tensor, root_rank, name=None, ignore_name_scope=False, process_set=process_sets.global_process_set):
    """root_rank's tensor, on every rank."""
    group = _Group(process_set, "broadcast")
    root, name, tensor = group.root(root_rank), _scoped(name, ignore_name_scope), tf.convert_to_tensor(tensor)
    if not tensor.dtype.is_floating:
        return _collectives().broadcast(tensor, root_rank=root, name=name, process_set_id=group.id)

    @tf.custom_gradient
    def from_root(x):
        def grad(dy):
            # Horovod 0.28's broadcast gradient: the gradient averaged across ranks, on the root only.
            averaged = _collectives().allreduce(dy, op="average", name=_derived(name, "grad"),
                                                process_set_id=group.id)
            if group.rank == root:
                return averaged
            with tf.control_dependencies([averaged]):  # a TF1 graph runs the allreduce on every rank
                return tf.zeros_like(averaged)
        return _collectives().broadcast(x, root_rank=root, name=name, process_set_id=group.id), grad
    return from_root(tensor)


def broadcast_(variables, root_rank, name=None, process_set=process_sets.global_process_set):
    """root_rank's values assigned to `variables` in place; returns them."""
    variables = list(variables)
    assigned = [variable.assign(broadcast(variable, root_rank, None if name is None else f"{name}.{index}", True,
                                          process_set)) for index, variable in enumerate(variables)]
    # In a TF1 graph the broadcast runs when what is returned is evaluated, as Horovod's in-place op does.
    return assigned if not tf.executing_eagerly() and not tf.inside_function() else variables


def _even_splits(rows, size):
    check = tf.debugging.assert_equal(rows % size, tf.zeros_like(rows), message=(
        "horovod.tensorflow.alltoall: without splits, dimension 0 must be a multiple of the number of ranks"))
    with tf.control_dependencies([check]):  # eagerly it has raised already; a TF1 graph runs it first
        return tf.fill([size], rows // size)


def alltoall(tensor, splits=None, name=None, ignore_name_scope=False, process_set=process_sets.global_process_set):
    """Rank r sends splits[j] rows of tensor to rank j (an even split by
    default). Returns the rows received, in rank order, and, when splits was
    given, how many came from each rank."""
    group = _Group(process_set, "alltoall")
    size = group.size
    tensor = tf.convert_to_tensor(tensor)
    if tensor.shape.rank == 0:
        raise ValueError("horovod.tensorflow.alltoall: the tensor needs at least one dimension")
    rows = tf.shape(tensor, out_type=tf.int64)[0]
    given = splits is not None
    counts = _even_splits(rows, size) if splits is None else tf.cast(tf.reshape(splits, [-1]), tf.int64)
    if counts.shape[0] is not None and counts.shape[0] != size:
        raise ValueError(f"horovod.tensorflow.alltoall: splits must hold {size} counts, not {counts.shape[0]}")
    checks = [tf.debugging.assert_equal(tf.reduce_sum(counts), rows, message=(
                  "horovod.tensorflow.alltoall: splits must sum to dimension 0 of the tensor")),
              tf.debugging.assert_non_negative(counts, message="horovod.tensorflow.alltoall: splits must be >= 0")]
    with tf.control_dependencies(checks):
        counts = tf.identity(counts)
    name = _scoped(name, ignore_name_scope)
    if tensor.dtype.is_floating:
        output, received = _alltoall_with_grad(tensor, counts, name, group)
    else:
        output, received = _exchange(tensor, counts, name, group)
    return (output, received) if given else output


def _exchange(tensor, counts, name, group):
    """(the rows this rank receives, in rank order; how many from each rank)."""
    size, rank = group.size, group.rank
    everyone = _collectives().allgather(tf.reshape(counts, [1, size]), name=_derived(name, "splits"),
                                        process_set_id=group.id)
    gathered = _collectives().allgather(tensor, name=_derived(name, "rows"), process_set_id=group.id)
    sender_rows = tf.reduce_sum(everyone, axis=1)
    sender_start = tf.cumsum(sender_rows, exclusive=True)
    starts = sender_start + tf.reduce_sum(everyone[:, :rank], axis=1)
    received = everyone[:, rank]
    picks = tf.ragged.range(starts, starts + received).flat_values
    return tf.gather(gathered, picks), tf.cast(received, tf.int32)  # Horovod's dtype for the received splits


def _alltoall_with_grad(tensor, counts, name, group):
    @tf.custom_gradient
    def exchange(x):
        output, received = _exchange(x, counts, name, group)

        def grad(dy, _):
            # The rows go back where they came from (Horovod's alltoall gradient).
            returned, _ = _exchange(dy, received, _derived(name, "grad"), group)
            return returned
        return (output, received), grad
    return exchange(tensor)


def reducescatter(tensor, device_dense="", compression=Compression.none, op=Average, name=None,
                  process_set=process_sets.global_process_set, ignore_name_scope=False, prescale_factor=1.0,
                  postscale_factor=1.0):
    """This rank's rows of the reduction across ranks: dimension 0 split as
    evenly as possible, the first ranks one row more."""
    group = _Group(process_set, "reducescatter")
    tensor = tf.convert_to_tensor(tensor)
    if tensor.shape.rank == 0:
        raise ValueError("horovod.tensorflow.reducescatter: the tensor needs at least one dimension")
    size, rank = group.size, group.rank
    summed = _ops.resolve(op, None, "reducescatter") == "sum"
    name = _scoped(None if name is None else f"{name}.reducescatter", ignore_name_scope)

    def scatter(x):
        full = allreduce(x, compression=compression, op=op, prescale_factor=prescale_factor,
                         postscale_factor=postscale_factor, name=name, process_set=process_set,
                         ignore_name_scope=True)
        rows = tf.shape(full)[0]
        base, extra = rows // size, rows % size
        start = rank * base + tf.minimum(rank, extra)
        count = base + tf.cast(rank < extra, base.dtype)
        return full[start:start + count]

    if not tensor.dtype.is_floating:
        return scatter(tensor)

    @tf.custom_gradient
    def scatter_with_grad(x):
        def grad(dy):
            # Horovod 0.28's reduce-scatter gradient: every rank's gradient gathered, times the ranks for Sum.
            gathered = _collectives().allgather(dy, name=_derived(name, "grad"), process_set_id=group.id)
            return gathered * tf.cast(size, gathered.dtype) if summed else gathered
        return scatter(x), grad
    return scatter_with_grad(tensor)


def grouped_reducescatter(tensors, device_dense="", compression=Compression.none, op=Average,
                          process_set=process_sets.global_process_set, prescale_factor=1.0, postscale_factor=1.0):
    return [reducescatter(t, device_dense, compression, op, None, process_set, False, prescale_factor,
                          postscale_factor) for t in tensors]


@contextlib.contextmanager
def _eagerly(who):
    """Runs the block eagerly: as it is outside any graph, and in eager mode
    while a TF1-style graph is the default (tf.Graph().as_default() in a TF2
    program): the call takes effect when made, as Horovod's does when it runs
    its ops in a session. Refused inside tf.function, whose trace runs later
    and maybe more than once."""
    if tf.executing_eagerly():
        yield
        return
    if tf.inside_function():
        refuse(f"{who} inside tf.function", "call it eagerly, outside the traced step")
    with runtime.eager_mode():
        yield


def join():
    """Every rank calls it once it has no more collectives to issue; until
    every rank has, this rank takes part in the others' allreduces with zeros,
    and their broadcasts and allgathers raise. Returns the rank that joined
    last (as a tensor)."""
    _require("join")
    with _eagerly("join"):
        last = runtime.join()
    return tf.constant(last, tf.int32)


def barrier(process_set=process_sets.global_process_set):
    """Returns once every rank has called it."""
    group = _Group(process_set, "barrier")
    with _eagerly("barrier"):
        if group.id == 0:
            runtime.gather_ints([0], "barrier")
        else:
            _collectives().allgather(tf.zeros([1], tf.int32), name="horovod.barrier", process_set_id=group.id)


def _broadcast_bytes(payload, root_rank, process_set):
    length = broadcast(tf.constant([len(payload)], tf.int64), root_rank, process_set=process_set).numpy()[0]
    data = (tf.constant(np.frombuffer(payload, np.uint8)) if runtime.rank == root_rank
            else tf.zeros([length], tf.uint8))
    return broadcast(data, root_rank, process_set=process_set).numpy().tobytes()


def _allgather_bytes(payload, process_set):
    lengths = allgather(tf.constant([len(payload)], tf.int64), process_set=process_set).numpy().tolist()
    everything = allgather(tf.constant(np.frombuffer(payload, np.uint8), shape=[len(payload)]),
                           process_set=process_set).numpy().tobytes()
    parts, start = [], 0
    for length in lengths:
        parts.append(everything[start:start + length])
        start += length
    return parts


def broadcast_object(obj, root_rank=0, session=None, name=None, process_set=process_sets.global_process_set):
    """root_rank's object (anything picklable), on every rank."""
    _Group(process_set, "broadcast_object").root(root_rank)
    with _eagerly("broadcast_object"):
        return objects.broadcast_object(obj, root_rank, runtime.rank,
                                        lambda payload, root: _broadcast_bytes(payload, root, process_set))


def allgather_object(obj, session=None, name=None, process_set=process_sets.global_process_set):
    """Every rank's object, in rank order."""
    _Group(process_set, "allgather_object")
    with _eagerly("allgather_object"):
        return objects.allgather_object(obj, lambda payload: _allgather_bytes(payload, process_set))


def _registered(process_set_id):
    """The registered process set of that id (0: the global one)."""
    if process_set_id == 0:
        return process_sets.global_process_set
    found = process_sets.registered(process_set_id)
    if found is None:
        raise ValueError(f"horovod.tensorflow: process set {process_set_id} is not registered")
    return found


def size_op(process_set_id=0, name=None):
    return tf.constant(_registered(process_set_id).size() if process_set_id else runtime.size, tf.int32, name=name)


def local_size_op(name=None):
    return tf.constant(runtime.local_size, tf.int32, name=name)


def rank_op(name=None):
    return tf.constant(runtime.rank, tf.int32, name=name)


def local_rank_op(name=None):
    return tf.constant(runtime.local_rank, tf.int32, name=name)


def process_set_included_op(process_set_id=0, name=None):
    return tf.constant(1 if _registered(process_set_id).included() or process_set_id == 0 else 0, tf.int32,
                       name=name)
