"""hvd.SyncBatchNormalization: a Keras BatchNormalization whose training
statistics cover the batch of every rank, so N ranks of batch B normalize
as one process of batch N*B would (the moving mean and variance included).

Made on tf.keras's BatchNormalization (tf_keras under TF_USE_LEGACY_KERAS=1,
Keras 3 otherwise), as Horovod's is, on first use. Only the moments change:
two allreduces per call, the per-channel sums and element counts, then the
sums of squared deviations from the global mean (two passes, so a large
mean does not cancel the variance). Statistics are computed in float32 at
least (float64 for float64 input). Not fused (fused=True is refused, as in
Horovod); inference uses the moving statistics, with no communication.
"""
import tensorflow as tf

_made = None


def _global_moments(inputs, axes, keep_dims, weights, epsilon):
    """The mean and variance over `axes` of every rank's inputs together;
    weights (a mask, 0 or 1, broadcast to the inputs) or None."""
    from .mpi_ops import Sum, allreduce
    dtype = tf.float64 if inputs.dtype == tf.float64 else tf.float32
    x = tf.cast(inputs, dtype)
    w = tf.ones_like(x) if weights is None else tf.cast(tf.broadcast_to(weights, tf.shape(x)), dtype)
    local = tf.stack([tf.reduce_sum(x * w, axes, keepdims=True), tf.reduce_sum(w, axes, keepdims=True)])
    total = allreduce(local, op=Sum)
    # Keras 3 divides masked sums by their weight plus epsilon; tf_keras's weighted moments divide with no NaN.
    divide = (lambda a, b: a / (b + epsilon)) if epsilon else tf.math.divide_no_nan
    count = total[1]
    mean = divide(total[0], count)
    squares = allreduce(tf.reduce_sum(w * tf.square(x - mean), axes, keepdims=True), op=Sum)
    variance = divide(squares, count)
    if not keep_dims:
        mean, variance = tf.squeeze(mean, axes), tf.squeeze(variance, axes)
    return tf.cast(mean, inputs.dtype), tf.cast(variance, inputs.dtype)


def made():
    """The SyncBatchNormalization class, made once on tf.keras's BatchNormalization."""
    global _made
    if _made is not None:
        return _made
    base = tf.keras.layers.BatchNormalization
    legacy = not base.__module__.startswith("keras.")  # tf_keras: _moments(inputs, reduction_axes, keep_dims, mask)

    def __init__(self, fused=False, **kwargs):
        if fused in (True, None):
            raise ValueError("hvd.SyncBatchNormalization: fused=True is not supported (it reduces the statistics "
                             "in one fused kernel that cannot reach the other ranks); pass fused=False")
        if legacy:
            kwargs["fused"] = False
        base.__init__(self, **kwargs)

    if legacy:
        def _moments(self, inputs, reduction_axes, keep_dims, mask=None):
            weights = None if mask is None else tf.expand_dims(mask, -1)
            return _global_moments(inputs, list(reduction_axes), keep_dims, weights, 0.0)
    else:
        def _moments(self, inputs, mask):
            from keras import backend
            weights = None if mask is None else tf.expand_dims(mask, -1)
            return _global_moments(inputs, list(self._reduction_axes), False, weights,
                                   0.0 if mask is None else backend.epsilon())

    _made = type("SyncBatchNormalization", (base,), {
        "__init__": __init__, "_moments": _moments, "__module__": __name__, "__doc__": __doc__})
    return _made
