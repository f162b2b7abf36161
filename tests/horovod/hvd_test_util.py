"""Shared by the Horovod API tests: exact inputs every rank can compute for
every other rank, and checks that say what differed."""
import numpy as np

COUNTS = (0, 1, 7, 1000)  # none, one, a prime, and more than a cache line of floats


def rank_input(rank, count, salt=0):
    """Rank `rank`'s values: small integers, exact in every float dtype."""
    i = np.arange(count, dtype=np.int64)
    return ((i * 7 + rank * 3 + salt) % 11 + 1).astype(np.float64)


def rows_input(rank, rows, width, salt=0):
    """rows x width small integers identifying the rank, row and column."""
    return (np.arange(rows * width, dtype=np.int64).reshape(rows, width) % 13 + 100 * rank + salt).astype(np.float64)


def reducescatter_rows(rows, size):
    """Horovod's split of dimension 0: as even as possible, lower ranks one more."""
    base, extra = divmod(rows, size)
    return [base + (1 if r < extra else 0) for r in range(size)]


def _numpy(value):
    if hasattr(value, "detach"):  # a torch tensor (bfloat16 has no NumPy dtype)
        import torch
        value = value.detach().to("cpu", torch.float64).numpy()
    return value


def check_equal(actual, expected, what, rtol=0.0):
    actual, expected = _numpy(actual), _numpy(expected)
    actual, expected = np.asarray(actual, dtype=np.float64), np.asarray(expected, dtype=np.float64)
    if actual.shape != expected.shape:
        raise AssertionError(f"{what}: shape {actual.shape}, expected {expected.shape}")
    if rtol == 0.0:
        ok = np.array_equal(actual, expected)
    else:
        ok = np.allclose(actual, expected, rtol=rtol, atol=rtol * max(1.0, float(np.abs(expected).max(initial=0))))
    if not ok:
        index = np.argmax(np.abs(actual - expected)) if actual.size else 0
        raise AssertionError(f"{what}: differs at flat index {index}: {actual.ravel()[index]} != "
                             f"{expected.ravel()[index]}")


def expect_error(call, *fragments, kinds=(Exception,)):
    """call() must raise one of `kinds`, with every fragment in its message."""
    try:
        call()
    except kinds as error:
        text = str(error)
        missing = [f for f in fragments if f not in text]
        if missing:
            raise AssertionError(f"error {type(error).__name__}: {text!r} does not mention {missing}") from error
        return error
    raise AssertionError(f"expected an error mentioning {fragments}, got none")


def check_a_rank_leaving(hvd, tensor):
    """The last rank shuts Horovod down, as the end of its script does, while the others enter a barrier
    it never will (and may already wait there). As in Horovod, one rank's shutdown ends every rank's
    engine: the others fail at once, naming the rank, instead of waiting forever, and so does what they
    submit afterwards; then they shut down too. `tensor` makes the framework's tensor of a list."""
    leaving = hvd.size() - 1
    if hvd.rank() == leaving:
        hvd.shutdown()
        return
    named = f"rank {leaving} shut it down"
    # Whether the shutdown reaches this rank before or after it submits, the error names the rank: in a
    # barrier (Horovod's goes through its engine too), then in an allreduce.
    expect_error(hvd.barrier, named)
    expect_error(lambda: hvd.allreduce(tensor([2.0]), name="leaving.after"), named)
    hvd.shutdown()


def synthetic_mnist(samples, seed=0):
    """MNIST-shaped data that a small model can learn: 28x28 images in [0, 1)
    and labels 0..9 that a fixed linear map of the image decides. Every rank
    makes the same arrays, as every rank of a Horovod job reads the same files."""
    state = np.random.RandomState(seed)
    images = state.rand(samples, 28, 28, 1).astype(np.float32)
    projection = state.randn(28 * 28, 10).astype(np.float32)
    labels = np.argmax(images.reshape(samples, -1) @ projection, axis=1).astype(np.int64)
    return images, labels


def check_training_step(actual, expected, what, rtol=1e-5):
    """One training step's results equal the reference's, computed from the
    same starting state, to rounding (rtol of their scale). Returns the
    largest difference."""
    scale = max(float(np.abs(np.asarray(_numpy(w), dtype=np.float64)).max(initial=0)) for w in expected)
    tolerance = rtol * max(scale, 1.0)
    worst = max(float(np.abs(np.asarray(_numpy(a), np.float64) - np.asarray(_numpy(e), np.float64)).max(initial=0))
                for a, e in zip(actual, expected))
    if worst > tolerance or len(actual) != len(expected):
        raise AssertionError(f"{what}: differs from the reference by {worst:.3g} (tolerance {tolerance:.3g})")
    return worst


def check_moved(trained, initial, worst, what):
    """Training moved the weights far more than the largest difference a
    step check allowed, so those checks were not vacuous. Returns the move."""
    moved = max(float(np.abs(np.asarray(_numpy(t), np.float64) - np.asarray(_numpy(i), np.float64)).max(initial=0))
                for t, i in zip(trained, initial))
    if moved < 1000 * max(worst, 1e-7):
        raise AssertionError(f"{what}: training moved the weights by {moved:.3g} only, too little to judge")
    return moved


def check_keras_elastic(hvd, keras, rank):
    """hvd.elastic on a Keras model (the hvd module and the Keras it serves):
    KerasState.sync gives every rank rank 0's weights and values, restore()
    goes back to the last save, and the elastic callbacks commit at each
    epoch's end and count batches and epochs during fit."""
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    mine = [np.full(w.shape, float(rank + 1)) for w in model.get_weights()]
    model.set_weights(mine)
    model.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
    state = hvd.elastic.KerasState(model, batch=20 + rank, epoch=10 + rank)
    state.sync()
    for got, w in zip(model.get_weights(), mine):
        check_equal(got, np.ones_like(w), "KerasState.sync: rank 0's weights")
    assert (state.batch, state.epoch) == (20, 10), (state.batch, state.epoch)
    model.set_weights([w * 0 for w in mine])
    state.batch = 5
    state.restore()
    for got in model.get_weights():
        check_equal(got, np.ones_like(got), "KerasState.restore: the synced weights")
    assert state.batch == 20
    x, y = np.arange(12.0).reshape(4, 3) / 10, np.ones((4, 2))
    state.batch = 0
    model.fit(x, y, batch_size=2, epochs=2, verbose=0, shuffle=False,
              callbacks=[hvd.elastic.UpdateBatchStateCallback(state), hvd.elastic.UpdateEpochStateCallback(state),
                         hvd.elastic.CommitStateCallback(state)])  # commits after the counts are updated
    trained = model.get_weights()
    assert (state.batch, state.epoch) == (0, 12), (state.batch, state.epoch)
    model.set_weights([w * 0 for w in trained])
    state.restore()
    for got, want in zip(model.get_weights(), trained):
        check_equal(got, want, "KerasState.restore after fit: the weights the last commit saved")
    assert (state.batch, state.epoch) == (0, 12), (state.batch, state.epoch)
    calls = []

    @hvd.elastic.run
    def train(state, factor):
        calls.append(factor)
        return state.epoch * factor

    assert train(state, 3) == 36 and calls == [3], calls


def check_sync_batch_norm(hvd, rank, size):
    """hvd.SyncBatchNormalization (horovod.tensorflow's, made on tf.keras's
    layer): N ranks of batches of 3, 2 and 1 rows (ragged, so a per-rank mean
    of means would differ) normalize as one process of the whole batch does
    with the plain layer: outputs, moving statistics, and the gradients of
    the input and, summed over ranks, of gamma and beta. Float64."""
    import tensorflow as tf
    rows = [3 - r % 3 if r % 3 else 3 for r in range(size)]  # 3, 2, 1, 3, ...
    batches = [rows_input(r, rows[r], 4, salt=5) / 16.0 for r in range(size)]
    whole = np.concatenate(batches)
    start = sum(rows[:rank])
    plain = tf.keras.layers.BatchNormalization(axis=-1, momentum=0.5, dtype="float64")
    synced = hvd.SyncBatchNormalization(axis=-1, momentum=0.5, dtype="float64")
    assert isinstance(synced, tf.keras.layers.BatchNormalization), type(synced).__mro__
    mine, everyone = tf.constant(batches[rank]), tf.constant(whole)
    weights = np.arange(4.0) + 1.0  # a loss that weights the channels differently
    for step in range(2):
        with tf.GradientTape(persistent=True) as tape:
            tape.watch(mine)
            tape.watch(everyone)
            out = synced(mine, training=True)
            reference = plain(everyone, training=True)
            loss = tf.reduce_sum(out * weights)
            reference_loss = tf.reduce_sum(reference * weights)
        check_equal(out, reference[start:start + rows[rank]], f"SyncBatchNormalization output, step {step}", 1e-12)
        check_equal(synced.moving_mean, plain.moving_mean, "SyncBatchNormalization moving mean", 1e-12)
        check_equal(synced.moving_variance, plain.moving_variance, "SyncBatchNormalization moving variance", 1e-12)
        check_equal(tape.gradient(loss, mine), tape.gradient(reference_loss, everyone)[start:start + rows[rank]],
                    "SyncBatchNormalization input gradient", 1e-10)
        for mine_w, plain_w in ((synced.gamma, plain.gamma), (synced.beta, plain.beta)):
            summed = hvd.allreduce(tape.gradient(loss, mine_w), op=hvd.Sum)
            check_equal(summed, tape.gradient(reference_loss, plain_w), f"SyncBatchNormalization {plain_w.name} "
                        "gradient summed over ranks", 1e-10)
        synced.gamma.assign(plain.gamma + 0.25)  # a step both layers take alike
        plain.gamma.assign(synced.gamma)
    check_equal(synced(mine, training=False), plain(mine, training=False), "SyncBatchNormalization inference", 1e-12)
    expect_error(lambda: hvd.SyncBatchNormalization(fused=True), "fused=True", kinds=(ValueError,))
