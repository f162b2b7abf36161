"""The TF1 patches MATEX_ENABLE=1 applies (graphs run by tf.compat.v1.Session):

- tf.compat.v1.train.Optimizer.compute_gradients: the gradients are reduced
  across ranks, weighted by a local batch size that Session.run feeds (one
  grouped allreduce of n_r * g_r and n_r), so apply_gradients and minimize
  see the global batch's gradient;
- Session.run of a training op (one made by a patched optimizer) with a
  feed_dict: every fed array whose first dimension is the batch's is cut into
  contiguous slices and rank r feeds the r-th (other feeds stay whole);
- tf.compat.v1.global_variables_initializer: initializes, then overwrites
  every global variable with rank 0's value.

- Session.run fetches that run with a training op: the loss given to
  minimize or compute_gradients, and any scalar mean over the batch (tf.reduce_mean
  of a tensor whose first dimension is the fed batch's), are returned with
  their global-batch values (weighted by the slices' sizes); other fetches
  are this rank's.
"""
import numpy as np
import tensorflow as tf

from . import _collectives, _runtime

_LOCAL_BATCH = "matex_local_batch_size"
_training_ops = set()  # names of ops a patched optimizer made
_global_values = {}    # (graph, name of a per-slice scalar) -> its value over the global batch


def _local_batch_placeholder(graph):
    try:
        return graph.get_tensor_by_name(_LOCAL_BATCH + ":0")
    except KeyError:
        with graph.as_default(), graph.name_scope(None):
            return tf.compat.v1.placeholder_with_default(tf.constant(1.0), [], name=_LOCAL_BATCH)


def _make_compute_gradients(original):
    def compute_gradients(self, loss, *args, **kwargs):
        pairs = original(self, loss, *args, **kwargs)
        if tf.executing_eagerly() or _runtime.size() == 1:
            return pairs
        present = [(g, v) for g, v in pairs if g is not None]
        if not present:
            return pairs
        graph = tf.compat.v1.get_default_graph()
        n = _local_batch_placeholder(graph)
        weighted = [tf.math.multiply_no_nan(tf.convert_to_tensor(g), tf.cast(n, g.dtype)) for g, _ in present]
        loss = tf.convert_to_tensor(loss) if not callable(loss) else None
        scalar_loss = loss is not None and loss.shape.rank == 0 and loss.dtype.is_floating
        # The loss's global-batch value rides in the same allreduce, for Session.run fetches of it.
        extra = [tf.reshape(tf.math.multiply_no_nan(loss, tf.cast(n, loss.dtype)), [1])] if scalar_loss else []
        summed = _collectives.allreduce(weighted + [tf.reshape(n, [1])] + extra, op="sum")
        total = summed[len(weighted)][0]
        if scalar_loss:
            _global_values[(graph, loss.name)] = summed[-1][0] / tf.cast(total, loss.dtype)
        reduced = iter(s / tf.cast(total, s.dtype) for s in summed[:len(weighted)])
        return [(next(reduced) if g is not None else None, v) for g, v in pairs]
    return compute_gradients


def _make_apply_gradients(original):
    def apply_gradients(self, grads_and_vars, *args, **kwargs):
        grads_and_vars = list(grads_and_vars)
        op = original(self, grads_and_vars, *args, **kwargs)
        if tf.executing_eagerly():
            return op
        _training_ops.add(op.name)
        return op
    return apply_gradients


def _make_global_variables_initializer(original):
    def global_variables_initializer():
        init = original()
        if _runtime.size() == 1:
            return init
        with tf.control_dependencies([init]):
            assigns = [v.assign(_collectives.broadcast(v.read_value(), root_rank=0))
                       for v in tf.compat.v1.global_variables()]
        return tf.group(init, *assigns, name="matex_init_and_broadcast")
    return global_variables_initializer


def _fetches_training_op(fetches):
    for f in tf.nest.flatten(fetches):
        name = getattr(f, "name", None)
        if name in _training_ops:
            return True
    return False


def _shard_feed(feed_dict, graph):
    arrays = {k: np.asarray(v) for k, v in feed_dict.items()}
    sizes = [a.shape[0] for a in arrays.values() if a.ndim >= 1]
    if not sizes:
        return feed_dict
    batch = max(set(sizes), key=sizes.count)
    r, n = _runtime.rank(), _runtime.size()
    begin, end = (batch * r) // n, (batch * (r + 1)) // n
    sharded = {k: (a[begin:end] if a.ndim >= 1 and a.shape[0] == batch else feed_dict[k]) for k, a in arrays.items()}
    try:
        sharded[graph.get_tensor_by_name(_LOCAL_BATCH + ":0")] = float(end - begin)
    except KeyError:
        pass
    return sharded


def _is_batch_mean(tensor):
    """A scalar mean over every axis of a tensor whose first dimension is the
    batch's (unknown in the graph: it is fed): a loss or an accuracy, say."""
    op = tensor.op
    return (tensor.shape.rank == 0 and tensor.dtype.is_floating and op.type == "Mean" and op.inputs[0].shape.rank
            and op.inputs[0].shape[0] is None)


def _global_value(graph, tensor):
    """The global-batch value of a fetched per-slice scalar, where it can be
    told: the loss the optimizer minimizes, or a scalar mean over every axis
    of a batch-shaped tensor (its sums and element counts added across ranks,
    one grouped allreduce built on first use, in the same order on every
    rank: exact for masked means too). Anything else is fetched as it is, and
    so is everything of a finalized graph, which takes no new op."""
    key = (graph, tensor.name)
    if key not in _global_values and _is_batch_mean(tensor):
        if graph.finalized:
            _warn_once("matex: the graph is finalized, so fetched batch means such as "
                       f"{tensor.name} stay this rank's slice's (build the graph before finalizing it)")
            return tensor
        with graph.as_default():
            values = tensor.op.inputs[0]
            total, count = _collectives.allreduce(
                [tf.reduce_sum(values), tf.cast(tf.size(values), tensor.dtype)], op="sum")
            _global_values[key] = total / count
    return _global_values.get(key, tensor)


_warned = set()


def _warn_once(message):
    if message not in _warned:
        _warned.add(message)
        import warnings
        warnings.warn(message)


def _global_fetches(fetches, graph):
    return tf.nest.map_structure(
        lambda f: _global_value(graph, f) if isinstance(f, tf.Tensor) and f.graph is graph else f, fetches)


def _make_session_run(original):
    def run(self, fetches, feed_dict=None, *args, **kwargs):
        if feed_dict and _runtime.size() > 1 and _fetches_training_op(fetches):
            feed_dict = _shard_feed(feed_dict, self.graph)
            fetches = _global_fetches(fetches, self.graph)
        return original(self, fetches, feed_dict, *args, **kwargs)
    return run


def apply_all(patch):
    optimizer = tf.compat.v1.train.Optimizer
    patch(optimizer, "compute_gradients", _make_compute_gradients)
    patch(optimizer, "apply_gradients", _make_apply_gradients)
    patch(tf.compat.v1.Session, "run", _make_session_run)
    patch(tf.compat.v1, "global_variables_initializer", _make_global_variables_initializer)
