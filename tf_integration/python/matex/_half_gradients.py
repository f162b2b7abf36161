"""Float16 and bfloat16 weight gradients summed as one process sums them
(MATEX_ENABLE=1, 2+ ranks, traced steps).

A mixed-precision layer reads its float32 variable through a cast to
float16 (or bfloat16), and TensorFlow's CPU kernels compute the variable's
gradient, a sum over the batch's rows (MatMul, BatchMatMul, Conv2D, BiasAdd),
in float32 and round it to 16 bits once (checked: bit for bit). Each rank holds only its rows:
rounding each rank's partial sum and then the sum of those rounds twice, and
about 40 % of the elements then differ from one process's by a unit in the
last place (measured on 32x64 float16 products), which Adam turns into weight
differences of 1e-3 within ten steps.

So the gradient functions of those four ops are wrapped: where an input is
a cast of a float32 variable to 16 bits, the same gradient is also computed
in float32 (the op again on float32 copies of its inputs; the products of
16-bit numbers are exact in float32) and recorded against the 16-bit
gradient. _gradients.py then sums the ranks' float32 partial sums and
rounds the total to 16 bits once, as one process does: the same bits, and a
float16 overflow (a skipped step under loss scaling) exactly where one
process's is. The 16-bit partial sum is no longer used, and TensorFlow
prunes it from the graph.
"""
import weakref

import tensorflow as tf
from tensorflow.python.framework import ops

from . import _runtime

_HALF = (tf.float16,)
_partials = weakref.WeakKeyDictionary()  # graph -> {16-bit gradient ref: its float32 twin}


def _read_of_wide_variable(tensor):
    """Whether a 16-bit input is a cast of a float32 (or float64) value: a
    mixed-precision layer's read of its variable."""
    op = tensor.op
    return (tensor.dtype in _HALF and op.type == "Cast" and op.inputs
            and op.inputs[0].dtype in (tf.float32, tf.float64))


def _wide_twin(op):
    """The op again, on float32 copies of its inputs (only its inputs and
    attributes are read by the gradient functions)."""
    wide = [tf.cast(t, tf.float32) for t in op.inputs]
    if op.type == "MatMul":
        return tf.raw_ops.MatMul(a=wide[0], b=wide[1], transpose_a=op.get_attr("transpose_a"),
                                 transpose_b=op.get_attr("transpose_b")).op
    if op.type == "BatchMatMulV2":
        return tf.raw_ops.BatchMatMulV2(x=wide[0], y=wide[1], adj_x=op.get_attr("adj_x"),
                                        adj_y=op.get_attr("adj_y")).op
    if op.type == "Conv2D":
        return tf.raw_ops.Conv2D(input=wide[0], filter=wide[1], strides=op.get_attr("strides"),
                                 padding=op.get_attr("padding"), explicit_paddings=op.get_attr("explicit_paddings"),
                                 data_format=op.get_attr("data_format"), dilations=op.get_attr("dilations"),
                                 use_cudnn_on_gpu=op.get_attr("use_cudnn_on_gpu")).op
    return None


def _wide_gradients(op, grad, original):
    """The float32 twins of the op's input gradients, by input index, for
    the inputs that are casts of float32 variables (a BiasAdd's bias: its
    gradient needs no input, and TensorFlow may not keep them)."""
    if op.type == "BiasAdd":
        return {1: tf.raw_ops.BiasAddGrad(out_backprop=tf.cast(grad, tf.float32),
                                          data_format=op.get_attr("data_format"))}
    if op.inputs is None:
        return {}
    wide_inputs = [i for i, t in enumerate(op.inputs) if _read_of_wide_variable(t)]
    twin = _wide_twin(op) if wide_inputs else None
    if twin is None:
        return {}
    wide_grads = original(twin, tf.cast(grad, tf.float32))
    return {i: wide_grads[i] for i in wide_inputs}


def _make_gradient(original):
    def gradient(op, grad):
        grads = original(op, grad)
        if (_runtime.size() == 1 or tf.executing_eagerly() or not isinstance(grad, tf.Tensor)
                or grad.dtype not in _HALF):
            return grads
        table = _partials.setdefault(tf.compat.v1.get_default_graph(), {})
        for i, wide in _wide_gradients(op, grad, original).items():
            if isinstance(grads[i], tf.Tensor) and isinstance(wide, tf.Tensor):
                table[grads[i].ref()] = wide
        return grads
    return gradient


def wide_partial(grad):
    """The float32 partial sum recorded for a variable's gradient (a cast to
    float32 of a 16-bit gradient recorded above), or None."""
    op = getattr(grad, "op", None)
    if tf.executing_eagerly() or op is None or op.type != "Cast" or not op.inputs:
        return None
    table = _partials.get(op.inputs[0].graph, {})
    return table.get(op.inputs[0].ref())


def apply_all():
    registry = ops._gradient_registry._registry
    for op_type in ("MatMul", "BatchMatMulV2", "BiasAdd", "Conv2D"):
        entry = registry.get(op_type)
        if entry is None or getattr(entry["type"], "_matex_patched", False):
            continue
        wrapped = _make_gradient(entry["type"])
        wrapped._matex_patched = True
        entry["type"] = wrapped
