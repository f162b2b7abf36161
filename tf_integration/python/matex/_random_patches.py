"""Random draws of the training step are drawn for the global batch
(MATEX_ENABLE=1, 2+ ranks), so that a rank holding rows [o, o + n) of a
global batch of B rows draws exactly the numbers one process draws for them.

TensorFlow's own random kernels are patched, below every API that reaches
them: keras.random.* and Keras' SeedGenerator draws (stateless kernels),
tf.random.* and tf.keras.backend.random_* (stateful kernels), tf.random.Generator, and the layers
built on them (GaussianNoise, GaussianDropout, AlphaDropout, SpatialDropout,
the random augmentation layers). A draw whose shape's first dimension is the
rank's n rows draws [B, ...] instead and keeps rows [o, o + n); a draw for
the shape of a concatenation of k such tensors (a GAN's labels for fake and
real images) draws [k * B, ...] and keeps each block's rows; any other draw
is left as it is, and is the same on every rank (the seeds agree,
_seeding.py), with a warning when its row count is computed from a batch's
size (2 * batch_size). One kernel either way: a stateful kernel's state advances by B
rows per draw, as in one process, also in steps where every rank holds the
whole batch (n = B, o = 0). Cost: every rank draws the global batch's numbers.

Draws in tf.data functions (input augmentation) are left alone: the input
pipeline runs before any slicing; so are Keras variables' initial values.
A stateful kernel (tf.random.*) in a traced custom-loop step follows one
process only while the step is not traced again: the loop's first step of
an epoch runs on the whole batch and the next on a slice, a new trace whose
kernel starts its stream anew. Keras' draws (stateless, their state in a
SeedGenerator variable) and tf.random.Generator are not affected. Draws whose result depends on per-row
parameters (categorical logits, gamma or Poisson rates, tf.random.shuffle of
a batch) cannot be made exact this way; a warning names the op once when its
first dimension is the rank's row count.
"""
import warnings

import numpy as np
import tensorflow as tf
from tensorflow.python.framework import func_graph, tensor_util

from . import _batch_layout, _runtime, _scope

# Kernels whose first argument is the output shape and that have no per-row parameters.
_SHAPE_FIRST = {
    "gen_random_ops": ("random_standard_normal", "random_uniform", "truncated_normal", "random_uniform_int"),
    "gen_stateless_random_ops_v2": ("stateless_random_normal_v2", "stateless_random_uniform_v2",
                                    "stateless_truncated_normal_v2", "stateless_random_uniform_int_v2",
                                    "stateless_random_uniform_full_int_v2"),
    "gen_stateless_random_ops": ("stateless_random_normal", "stateless_random_uniform", "stateless_truncated_normal",
                                 "stateless_random_uniform_int", "stateless_random_uniform_full_int"),
}
# Draws that follow per-row inputs: warned about, not changed.
_NOT_EXACT = {
    "gen_random_ops": ("multinomial", "random_shuffle", "random_gamma", "random_poisson_v2"),
    "gen_stateless_random_ops": ("stateless_multinomial", "stateless_random_poisson", "stateless_random_binomial"),
    "gen_stateless_random_ops_v2": ("stateless_random_gamma_v3", "stateless_shuffle"),
}
# tf.random.Generator's kernels: (resource, algorithm, shape, ...).
_SHAPE_THIRD = {
    "gen_stateful_random_ops": ("stateful_standard_normal_v2", "stateful_uniform", "stateful_truncated_normal",
                                "stateful_uniform_int", "stateful_uniform_full_int"),
}
_warned = set()


def _layout():
    """The sliced layout a draw made now belongs to, or None."""
    if (_runtime.size() == 1 or tf.distribute.has_strategy() or _scope.flag("initializing")
            or _scope.flag("not_batch_draws")):
        return None  # a variable's initial value, a mask shared by every row: no draw for the batch
    graph = None if tf.executing_eagerly() else tf.compat.v1.get_default_graph()
    if graph is not None and not isinstance(graph, func_graph.FuncGraph):
        return None  # a TF1 graph: its batches are sliced through the feeds, not through layouts
    while graph is not None:
        if (getattr(graph, "name", "") or "").startswith("Dataset_"):
            return None  # the input pipeline (a function it calls too)
        graph = getattr(graph, "outer_graph", None)
    return _batch_layout.of_last_step()


def _rows_of(layout, dtype):
    return (tf.cast(layout.local, dtype), tf.cast(layout.total, dtype), tf.cast(layout.offset, dtype))


# Ops whose output has the rows of their first input (a layer applied to a concatenation keeps its blocks).
_ROWWISE = ("Identity", "Cast", "Relu", "Relu6", "LeakyRelu", "Elu", "Selu", "Sigmoid", "Tanh", "Softplus",
            "Softsign", "Softmax", "LogSoftmax", "Neg", "Square", "Sqrt", "Rsqrt", "Exp", "Log", "Abs", "BiasAdd",
            "Conv2D", "Conv3D", "DepthwiseConv2dNative", "MaxPool", "AvgPool", "MaxPool3D", "AvgPool3D",
            "FusedBatchNormV3", "AddV2", "Add", "Sub", "Mul", "RealDiv", "Maximum", "Minimum", "SelectV2")


def _keeps_rows(op):
    """Whether op's first output has the rows of its first input."""
    if op.type in _ROWWISE:
        return op.outputs[0].shape.rank is not None and op.inputs[0].shape.rank == op.outputs[0].shape.rank
    if op.type == "MatMul":
        return not op.get_attr("transpose_a")
    if op.type == "Reshape":  # Flatten: reshape(x, [shape(x)[0], -1]) or [-1, k]
        first = op.inputs[1].op.inputs[0] if op.inputs[1].op.type == "Pack" else None
        constant = tensor_util.constant_value(op.inputs[1])
        inner = op.inputs[0].shape[1:]
        return ((constant is not None and len(constant) > 1 and constant[0] == -1 and inner.is_fully_defined()
                 and int(np.prod(constant[1:])) == inner.num_elements())
                or (first is not None and first.op.type == "StridedSlice" and first.op.inputs[0].op.type == "Shape"
                    and first.op.inputs[0].op.inputs[0] is op.inputs[0]))
    return False


def _concatenated_blocks(shape):
    """In a traced step, the tensors that a draw's shape comes from when it is
    the shape of their concatenation along the first axis, or of what layers
    made of it row by row, or []: labels = concat([ones([n, 1]), zeros([n,
    1])]) drawn for with tf.shape(labels) or keras.ops.shape(labels) (a GAN's
    label noise, in keras-io's DCGAN); a Dropout after a discriminator's
    layers on the concatenated fake and real images."""
    if tf.executing_eagerly():
        return []
    source = None
    if shape.op.type == "Shape":
        source = shape.op.inputs[0]
    elif shape.op.type == "Pack" and shape.op.inputs:
        first = shape.op.inputs[0]
        if first.op.type == "StridedSlice" and first.op.inputs[0].op.type == "Shape":
            begin = tensor_util.constant_value(first.op.inputs[1])
            if begin is not None and list(begin) == [0]:
                source = first.op.inputs[0].op.inputs[0]
    for _ in range(64):  # through the layers, row by row
        if source is None or not source.op.inputs or not _keeps_rows(source.op):
            break
        source = source.op.inputs[0]
    if source is None or source.op.type != "ConcatV2":
        return []
    axis = tensor_util.constant_value(source.op.inputs[-1])
    return list(source.op.inputs[:-1]) if axis is not None and int(axis) == 0 else []


_ARITHMETIC = ("Mul", "AddV2", "Add", "Sub", "FloorDiv", "RealDiv", "TruncateDiv", "Maximum", "Minimum")


def _size_from_batch_arithmetic(shape):
    """In a traced step, whether the draw's first dimension is computed from a
    tensor's size (2 * batch_size, say): its rows may stand for the batch's,
    but matex cannot tell which of them are this rank's."""
    if tf.executing_eagerly() or shape.op.type != "Pack" or not shape.op.inputs:
        return False
    first = shape.op.inputs[0]
    if first.op.type not in _ARITHMETIC:
        return False
    pending, seen = list(first.op.inputs), 0
    while pending and seen < 16:
        tensor, seen = pending.pop(), seen + 1
        if tensor.op.type in ("Shape", "Size"):
            return True
        pending.extend(tensor.op.inputs)
    return False


def _rows_to_keep(blocks, rows, local, total, offset):
    """Which rows of the drawn tensor this rank keeps: each block's rows of
    the global batch when every block has the rank's row count (the draw was
    made for k * total rows), else rows [offset, offset + rows) when the
    first dimension is the rank's, else the first `rows`."""
    index = tf.range(rows)
    mine = tf.equal(rows, local)
    blocked = tf.reduce_all(tf.stack([tf.equal(tf.shape(b, out_type=rows.dtype)[0], local) for b in blocks]
                                     + [tf.equal(rows, len(blocks) * local)]))
    per_block = tf.maximum(local, 1)
    in_blocks = index // per_block * total + offset + index % per_block
    keep = tf.where(blocked, in_blocks, tf.where(mine, index + offset, index))
    drawn_rows = tf.where(blocked, total * len(blocks), tf.where(mine, total, rows))
    return keep, drawn_rows


def _make_shape_arg(position):
    """A make() for a kernel whose argument `position` is the output shape."""
    def make(original):
        def draw(*args, **kwargs):
            layout = _layout()
            if layout is None or len(args) <= position:
                return original(*args, **kwargs)
            shape = tf.convert_to_tensor(args[position])
            if shape.shape.rank != 1 or shape.shape[0] == 0 or not shape.dtype.is_integer:
                return original(*args, **kwargs)
            local, total, offset = _rows_of(layout, shape.dtype)
            rows = shape[0]
            blocks = _concatenated_blocks(shape)
            if blocks:
                keep, drawn_rows = _rows_to_keep(blocks, rows, local, total, offset)
                drawn_shape = tf.concat([tf.reshape(drawn_rows, [1]), shape[1:]], 0)
                out = tf.gather(original(*args[:position], drawn_shape, *args[position + 1:], **kwargs), keep)
            else:
                name = getattr(original, "__name__", "random")
                if name not in _warned and _size_from_batch_arithmetic(shape):
                    _warned.add(name)
                    warnings.warn(f"matex: the random op {name} draws a number of rows computed from a batch's "
                                  "size; matex cannot tell which of them belong to this rank's slice, so its "
                                  "numbers differ from one process's (draw with the shape of the batch, or of a "
                                  "concatenation of batch-sized tensors, to make it exact)")
                mine = tf.equal(rows, local)
                # One kernel either way: the global rows and my offset when the first dimension is my slice's.
                drawn_shape = tf.concat([tf.reshape(tf.where(mine, total, rows), [1]), shape[1:]], 0)
                drawn = original(*args[:position], drawn_shape, *args[position + 1:], **kwargs)
                start = tf.where(mine, offset, tf.zeros_like(offset))
                out = drawn[start:start + rows]
            if not tf.executing_eagerly():
                out.set_shape(tensor_util.constant_value_as_shape(shape))  # the static shape of the plain draw
            return out
        return draw
    return make


def _make_not_exact(original, name):
    def draw(*args, **kwargs):
        layout = _layout()
        if layout is not None and name not in _warned and tf.executing_eagerly():
            first = tf.convert_to_tensor(args[0]) if args else None
            if first is not None and first.shape.rank and int(first.shape[0] or -1) == int(layout.local) \
                    and int(layout.local) != int(layout.total):
                _warned.add(name)
                warnings.warn(f"matex: the random op {name} draws from per-row inputs of this rank's slice of the "
                              "batch; it cannot be drawn for the global batch, so its numbers differ from one "
                              "process's")
        elif (layout is not None and name not in _warned and not tf.executing_eagerly() and args
              and tf.convert_to_tensor(args[0]).shape.rank and tf.convert_to_tensor(args[0]).shape[0] is None):
            _warned.add(name)  # a batch-like first dimension in a traced step
            warnings.warn(f"matex: the random op {name} in a traced step cannot be drawn for the global batch when "
                          "its inputs are this rank's rows; its numbers may differ from one process's")
        return original(*args, **kwargs)
    return draw


def apply_all(patch):
    from . import _keras_compat
    try:
        owners = _keras_compat.variable_classes()  # the TensorFlow backend's overrides the common one
    except ImportError:
        pass  # no Keras 3
    else:
        for owner in owners:
            if "_initialize_with_initializer" in owner.__dict__:
                patch(owner, "_initialize_with_initializer", _scope.while_set("initializing"))
    from tensorflow.python.ops import (gen_random_ops, gen_stateful_random_ops, gen_stateless_random_ops,
                                       gen_stateless_random_ops_v2)
    modules = {"gen_random_ops": gen_random_ops, "gen_stateless_random_ops": gen_stateless_random_ops,
               "gen_stateless_random_ops_v2": gen_stateless_random_ops_v2,
               "gen_stateful_random_ops": gen_stateful_random_ops}
    for position, kernels in ((0, _SHAPE_FIRST), (2, _SHAPE_THIRD)):
        for module, names in kernels.items():
            for name in names:
                if hasattr(modules[module], name):
                    patch(modules[module], name, _make_shape_arg(position))
    for module, names in _NOT_EXACT.items():
        for name in names:
            if hasattr(modules[module], name):
                patch(modules[module], name, lambda original, n=name: _make_not_exact(original, n))
