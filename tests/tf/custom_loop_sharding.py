"""MATEX_ENABLE=1, custom loops over a batched tf.data dataset: a loop that only
predicts sees every row on every rank (no rank loses data); a training loop
sees a whole batch until its first optimizer update, then rank r's contiguous
slice of each batch; every new loop (epoch) starts whole again, and a loop
that predicts after training sees every row. Rows carry their own index, so
each rank checks what it got against the slices computed here. 48 rows in
batches of 7 give slices whose shapes repeat on some ranks and are new on
others, so the traced step is retraced on some ranks only: its collectives
must still match (they are named per trace). Exits non-zero otherwise."""
import sys

import numpy as np
import tensorflow as tf
import keras

import matex

rank, size = matex.rank(), matex.size()
rows, batch = 48, 7  # batches of 7 and a last one of 6: uneven slices
dataset = tf.data.Dataset.from_tensor_slices(np.arange(rows, dtype=np.float32).reshape(rows, 1)).batch(batch)
model = keras.Sequential([keras.Input(shape=(1,)), keras.layers.Dense(1)])
optimizer = keras.optimizers.SGD(0.001)
failures = []


def expect(what, got, want):
    if not np.array_equal(np.asarray(got), np.asarray(want)):
        failures.append(f"{what}: got {np.asarray(got).ravel().tolist()}, want {np.asarray(want).ravel().tolist()}")


def my_slice(k):
    whole = np.arange(k * batch, min(rows, (k + 1) * batch), dtype=np.float32)
    n = len(whole)
    return whole[n * rank // size:n * (rank + 1) // size]


@tf.function
def train_step(x):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(model(x)))
    optimizer.apply_gradients(zip(tape.gradient(loss, model.trainable_variables), model.trainable_variables))


seen = np.concatenate([x.numpy().ravel() for x in dataset])  # predicting, exporting: whole batches
expect("a loop without training", seen, np.arange(rows))
for k, x in enumerate(dataset):
    expect(f"training loop, batch {k}", x.numpy().ravel(), np.arange(0, batch) if k == 0 else my_slice(k))
    train_step(x)
for k, x in enumerate(dataset):  # a new loop: whole again until its first update
    expect(f"second epoch, batch {k}", x.numpy().ravel(), np.arange(0, batch) if k == 0 else my_slice(k))
    train_step(x)
seen = np.concatenate([x.numpy().ravel() for x in dataset])  # predicting after training
expect("a loop without training, after training", seen, np.arange(rows))

failed = matex.allreduce(tf.constant([float(len(failures))]), op="sum").numpy()[0]
for f in failures:
    print(f"rank {rank}: FAIL {f}", flush=True)
if rank == 0 and failed == 0:
    print(f"PASS: custom-loop sharding on {size} ranks", flush=True)
sys.exit(1 if failed else 0)
