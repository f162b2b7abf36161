"""Each rank runs an input pipeline's per-row map for its own rows only
(MATEX_INPUT_SHARDING=auto), with fit, evaluate and predict unchanged.

A plain Keras script over four tf.data pipelines, each ending in a map that
counts its calls (a py_function) before batch(32):
- slices: from_tensor_slices(640) -> shuffle(seed) -> map -> batch(32) -> prefetch;
- partial: the same over 650 rows (a last batch of 10);
- text: three CSV files -> list_files(seed) -> interleave(TextLineDataset) ->
  map(decode_csv) -> map -> batch(16) (unknown cardinality);
- stateful: a map that adds tf.random.uniform noise (stateful, so not
  shardable): every rank maps every row, and rank 0 warns once, naming
  RandomUniform.
A custom loop over the first pipeline maps this rank's rows only once it
trains (the batches already started excepted).
The script checks its own counts against the rows its rank should map, from
the rank and world size the launcher gives (one process: every row), so it
runs as is in matex.verify's plain and distributed runs, which compare the
loss curves and evaluate's figures. predict must return every row, in order,
on every rank: it is compared with the model called on all rows.
"""
import os
import sys
import tempfile
import warnings

import numpy as np
import tensorflow as tf
import keras

ROWS, BATCH, EPOCHS = 640, 32, 2
enabled = getattr(sys.modules.get("matex._activation"), "active", lambda: False)()  # MATEX_ENABLE=1 took effect
rank = int(os.environ.get("OMPI_COMM_WORLD_RANK", "0")) if enabled else 0
size = int(os.environ.get("OMPI_COMM_WORLD_SIZE", "1")) if enabled else 1
sharded = os.environ.get("MATEX_INPUT_SHARDING", "auto") != "replicate"
calls = [0]


def count(x):
    def counted(v):
        calls[0] += 1
        return v
    y = tf.py_function(counted, [x], x.dtype)
    y.set_shape(x.shape)
    return y


def my_rows(global_rows, batch, split_by_batch=True):
    """Rows this rank maps per pass: its [B*r//N, B*(r+1)//N) of each window of B rows."""
    if not sharded or size == 1:
        return global_rows
    total = 0
    for start in range(0, global_rows, batch):
        b = min(batch, global_rows - start)
        lo, hi = batch * rank // size, batch * (rank + 1) // size
        total += max(0, min(hi, b) - lo)
    return total


def features(n):
    v = np.arange(n, dtype="float32")
    return np.stack([np.sin(v), np.cos(0.5 * v), (v % 7) / 7.0], axis=1), (v % 3 == 0).astype("float32")


def slices(n, noisy=False, reshuffle=True):
    x, y = features(n)
    ds = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(n, seed=5, reshuffle_each_iteration=reshuffle)
    if noisy:  # one map, sequential: the same draws for the same rows as on one process
        ds = ds.map(lambda a, b: (count(a) + tf.random.uniform([3], -0.01, 0.01, seed=9), b))
    else:
        ds = ds.map(lambda a, b: (count(a), b), num_parallel_calls=4)
    return ds.batch(BATCH).prefetch(2), n, BATCH


def text(directory):
    x, y = features(333)
    for f in range(3):
        with open(os.path.join(directory, f"part{f}.csv"), "w") as out:
            out.writelines(f"{a},{b},{c},{t}\n" for (a, b, c), t in zip(x[f::3], y[f::3]))
    files = tf.data.Dataset.list_files(os.path.join(directory, "*.csv"), seed=3)
    lines = files.interleave(tf.data.TextLineDataset, cycle_length=3)
    parsed = lines.map(lambda line: tf.io.decode_csv(line, [[0.0]] * 4))
    return parsed.map(lambda a, b, c, t: (count(tf.stack([a, b, c])), t)).batch(16), 333, 16


counted_in_callbacks = [0]


class PredictAtEpochEnd(keras.callbacks.Callback):
    """predict from inside fit: every row, not fit's slice of them."""
    def on_epoch_end(self, epoch, logs=None):
        before = calls[0]
        rows = np.concatenate([b.numpy() for b in probe])
        got = self.model.predict(probe, verbose=0)
        counted_in_callbacks[0] += calls[0] - before
        if got.shape != (len(rows), 1):
            failures.append(f"predict in a callback of fit gave {got.shape}, expected {(len(rows), 1)}")


probe = tf.data.Dataset.from_tensor_slices(features(37)[0]).map(count).batch(8)
keras.utils.set_random_seed(1)
model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(16, activation="tanh"), keras.layers.Dense(1)])
model.compile(keras.optimizers.SGD(0.05), keras.losses.BinaryCrossentropy(from_logits=True), metrics=["mae"])
failures = []

with tempfile.TemporaryDirectory() as directory:
    for name, (dataset, n, batch) in (("slices", slices(ROWS)), ("partial", slices(650, reshuffle=False)), ("text", text(directory)),
                                      ("stateful", slices(ROWS, noisy=True))):
        expected = my_rows(n, batch) if name != "stateful" else n
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            calls[0] = counted_in_callbacks[0] = 0
            model.fit(dataset, epochs=EPOCHS, verbose=0, callbacks=[PredictAtEpochEnd()] if name == "partial" else [])
            fit_calls = calls[0] - counted_in_callbacks[0]
            calls[0] = 0
            model.evaluate(dataset, verbose=0)
            evaluate_calls = calls[0]
            calls[0] = 0
            predicted = model.predict(dataset, verbose=0)
            predict_calls = calls[0]
        said = [str(w.message) for w in caught if "matex: input pipeline not sharded" in str(w.message)]
        print(f"{name}: rank {rank}/{size} map calls fit {fit_calls} evaluate {evaluate_calls} predict {predict_calls}"
              f" (expected {EPOCHS}x{expected}, {expected}, {expected}); warnings {len(said)}", flush=True)
        if (fit_calls, evaluate_calls, predict_calls) != (EPOCHS * expected, expected, expected):
            failures.append(f"{name}: map calls {fit_calls}/{evaluate_calls}/{predict_calls}, expected "
                            f"{EPOCHS * expected}/{expected}/{expected}")
        want_warnings = 1 if name == "stateful" and enabled and size > 1 and rank == 0 and sharded else 0
        if len(said) != want_warnings or (said and "RandomUniform" not in said[0]):
            failures.append(f"{name}: {len(said)} sharding warnings on rank {rank}, expected {want_warnings}: {said}")
        # predict: every row, in the pipeline's order, on every rank. The reference: the model on the
        # same rows, read from the same pipeline without a model (a plain iteration: whole batches). A
        # pipeline that reshuffles each pass has another order then: its outputs are compared sorted.
        rows = np.concatenate([b[0].numpy() for b in dataset]) if name != "stateful" else None
        if rows is not None:
            reference = model(rows, training=False).numpy()
            if name != "partial":
                predicted, reference = np.sort(predicted, axis=0), np.sort(reference, axis=0)
            if predicted.shape != reference.shape or not np.allclose(predicted, reference, rtol=1e-5, atol=1e-6):
                failures.append(f"{name}: predict gave {predicted.shape}, differing from the model on every row "
                                f"{reference.shape}")

# A custom loop over a pipeline with a pure map: once the loop trains (from its second batch on), the map
# runs for this rank's rows only, except on the batches tf.data had started before (the first one and
# those in its buffers), which come whole and are sliced. 40 batches: at least half the saving shows.
LOOP_ROWS = 1280
loop_data, _, _ = slices(LOOP_ROWS)
loop_optimizer, loop_loss = keras.optimizers.SGD(0.05), keras.losses.BinaryCrossentropy(from_logits=True)


@tf.function
def train_step(x, y):
    with tf.GradientTape() as tape:
        loss = loop_loss(y, model(x, training=True))
    loop_optimizer.apply_gradients(zip(tape.gradient(loss, model.trainable_variables), model.trainable_variables))


for epoch in range(EPOCHS):
    calls[0] = 0
    for x, y in loop_data:
        train_step(x, y)
    share = my_rows(LOOP_ROWS, BATCH)
    most = share + (LOOP_ROWS - share) // 2
    print(f"custom loop: rank {rank}/{size} epoch {epoch} map calls {calls[0]} (its share {share}, at most {most})",
          flush=True)
    if not share <= calls[0] <= most:
        failures.append(f"custom loop, epoch {epoch}: {calls[0]} map calls, expected {share} to {most}")

# A script's own predict_step through super() (gathered once), and a compile that changes
# steps_per_execution (predict traced again, every batch's outputs kept).
class OwnPredictStep(keras.Model):
    def predict_step(self, data):
        return super().predict_step(data)


inputs = keras.Input((3,))
for name, which in (("own predict_step", OwnPredictStep(inputs, model(inputs))), ("steps_per_execution=3", model)):
    which.compile(keras.optimizers.SGD(0.05), "mse", steps_per_execution=3)
    dataset, _, _ = slices(97, reshuffle=False)  # 3 batches of 32 and one of 1
    got = which.predict(dataset, verbose=0)
    reference = which(np.concatenate([b[0].numpy() for b in dataset]), training=False).numpy()
    if got.shape != reference.shape or not np.allclose(got, reference, rtol=1e-5, atol=1e-6):
        failures.append(f"{name}: predict gave {got.shape}, the model on every row {reference.shape}")

if failures:
    print(f"rank {rank}: " + "; ".join(failures), file=sys.stderr, flush=True)
    sys.exit(1)
print(f"rank {rank}: input work as expected", flush=True)
