"""Layers whose training behaviour depends on the whole batch, made to see the
global batch when each rank holds a slice of it (MATEX_ENABLE=1, 2+ ranks).

- BatchNormalization: the moments are those of the global batch, as one
  process computes them (mean first, then the mean squared difference from
  it), from per-channel sums added across ranks. Their gradient flows back
  through the same sums: rank r receives the sum over ranks s of w_s * g_s,
  divided by its own w_r, because the optimizer then weights rank r's
  gradient by w_r (_gradients.rank_weight: n_r, or 1 under loss scaling). A rank with an empty
  slice gets the global moments, not NaN. Cost per layer and step: two
  grouped allreduces of one value per channel forward, two backward.
- Dropout: its mask is drawn for the whole global batch like every random
  draw of the batch's shape (_random_patches.py), except with a noise_shape
  whose first dimension is 1 (one mask row for every row).

Masked BatchNormalization (a `mask` argument) keeps its local moments.
"""
import keras
import tensorflow as tf

from . import _batch_layout, _collectives, _gradients, _runtime, _scope


def _rank_weight(dtype):
    """This rank's weight in the optimizer's reduction (_gradients.rank_weight):
    its row count, or 1 where the step's loss was scaled to the rank's
    contribution (loss scaling) and the ranks' gradients are summed. Read
    when the backward pass runs, after the loss was scaled."""
    layout = _batch_layout.of_last_step()
    if layout is None:
        return tf.constant(1, dtype)
    return tf.cast(_gradients.rank_weight(layout, _gradients.contribution_in_step()), dtype)


def _sum_across_ranks(tensors):
    """Element-wise sums over ranks, differentiable for the weighted gradient
    described above."""
    @tf.custom_gradient
    def summed(*xs):
        ys = _collectives.allreduce(list(xs), op="sum")

        def gradient(*dys):
            weight = _rank_weight(xs[0].dtype)
            dys = [tf.zeros_like(x) if d is None else d for d, x in zip(dys, xs)]
            sums = _collectives.allreduce([d * weight for d in dys], op="sum")
            return [tf.math.divide_no_nan(s, weight) for s in sums]

        return ys, gradient

    return summed(*tensors)


def global_moments(x, axes):
    """Mean and variance over `axes` of the global batch (keepdims=False)."""
    local_sum = tf.reduce_sum(x, axes, keepdims=True)
    per_channel = tf.cast(tf.size(x), x.dtype) / tf.cast(tf.maximum(tf.size(local_sum), 1), x.dtype)
    total_sum, count = _sum_across_ranks([local_sum, tf.reshape(per_channel, [1])])
    count = tf.stop_gradient(count[0])
    mean = tf.math.divide_no_nan(total_sum, count)
    squares = tf.reduce_sum(tf.math.squared_difference(x, tf.stop_gradient(mean)), axes, keepdims=True)
    variance = tf.math.divide_no_nan(_sum_across_ranks([squares])[0], count)
    return tf.squeeze(mean, axes), tf.squeeze(variance, axes)


def _make_moments(original):
    def _moments(self, inputs, mask):
        if mask is not None or _runtime.size() == 1 or tf.distribute.has_strategy():
            return original(self, inputs, mask)
        x = tf.convert_to_tensor(inputs)
        need_cast = x.dtype in (tf.float16, tf.bfloat16)
        mean, variance = global_moments(tf.cast(x, tf.float32) if need_cast else x, list(self._reduction_axes))
        if need_cast:
            mean, variance = tf.cast(mean, x.dtype), tf.cast(variance, x.dtype)
        return mean, variance
    return _moments


def _make_dropout_call(original):
    """Dropout's mask is a random draw of the batch's shape, drawn for the
    global batch by _random_patches. A noise_shape whose first dimension is 1
    shares one mask row across the batch: that draw is not the batch's."""
    def call(self, inputs, training=False):
        if self.noise_shape is not None and self.noise_shape[0] == 1:
            with _scope.setting("not_batch_draws", True):
                return original(self, inputs, training=training)
        return original(self, inputs, training=training)
    return call


def apply_all(patch):
    from keras.src.layers.normalization import batch_normalization
    patch(batch_normalization.BatchNormalization, "_moments", _make_moments)
    patch(keras.layers.Dropout, "call", _make_dropout_call)
