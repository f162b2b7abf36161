"""MATEX_ENABLE=1, custom loops over a batched tf.data dataset: a loop that only
predicts sees every row on every rank (no rank loses data); a training loop
sees a whole batch until its first optimizer update, then rank r's contiguous
slice of each batch; every new loop (epoch) starts whole again, and a loop
that predicts after training sees every row. Rows carry their own index, so
each rank checks what it got against the slices computed here. 48 rows in
batches of 7 give slices whose shapes repeat on some ranks and are new on
others, so the traced step is retraced on some ranks only: its collectives
must still match (they are named per trace). The same holds for a pipeline
with a pure map before its batch, whose batches matex cuts before the map
once the loop trains (_loop_plan.py), and for a checkpoint of such an
iterator, restored on its own rank (the same batches follow) and on another
(an error naming both ranks). Exits non-zero otherwise."""
import os
import shutil
import sys
import tempfile

import numpy as np
import tensorflow as tf
import keras

import matex

rank, size = matex.rank(), matex.size()
batch = 7  # batches of 7 and a last one of 6 (48 rows) or 3 (150 rows): uneven slices
sliced = tf.data.Dataset.from_tensor_slices(np.arange(48, dtype=np.float32).reshape(48, 1)).batch(batch)
# More batches than tf.data keeps in flight, so that matex plans the cut (matex/_loop_plan.py).
mapped = tf.data.Dataset.range(150).map(lambda i: tf.reshape(tf.cast(i, tf.float32), [1])).batch(batch).prefetch(2)
model = keras.Sequential([keras.Input(shape=(1,)), keras.layers.Dense(1)])
optimizer = keras.optimizers.SGD(0.001)
failures = []


def expect(what, got, want):
    if not np.array_equal(np.asarray(got), np.asarray(want)):
        failures.append(f"{what}: got {np.asarray(got).ravel().tolist()}, want {np.asarray(want).ravel().tolist()}")


def my_slice(k, rows):
    whole = np.arange(k * batch, min(rows, (k + 1) * batch), dtype=np.float32)
    n = len(whole)
    return whole[n * rank // size:n * (rank + 1) // size]


@tf.function
def train_step(x):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(model(x)))
    optimizer.apply_gradients(zip(tape.gradient(loss, model.trainable_variables), model.trainable_variables))


for name, dataset, rows in (("from_tensor_slices", sliced, 48), ("a pure map", mapped, 150)):
    seen = np.concatenate([x.numpy().ravel() for x in dataset])  # predicting, exporting: whole batches
    expect(f"{name}: a loop without training", seen, np.arange(rows))
    for k, x in enumerate(dataset):
        want = np.arange(0, batch) if k == 0 else my_slice(k, rows)
        expect(f"{name}: training loop, batch {k}", x.numpy().ravel(), want)
        train_step(x)
    for k, x in enumerate(dataset):  # a new loop: whole again until its first update
        want = np.arange(0, batch) if k == 0 else my_slice(k, rows)
        expect(f"{name}: second epoch, batch {k}", x.numpy().ravel(), want)
        train_step(x)
    seen = np.concatenate([x.numpy().ravel() for x in dataset])  # predicting after training
    expect(f"{name}: a loop without training, after training", seen, np.arange(rows))



def shared_directory():
    """Rank 0's temporary directory, named to every rank (one machine here)."""
    name = tempfile.mkdtemp(prefix="matex-loop-") if rank == 0 else ""
    codes = np.frombuffer(name.encode().ljust(256, b"\0"), np.uint8).astype(np.int32)
    return bytes(matex.broadcast(tf.constant(codes)).numpy().astype(np.uint8)).rstrip(b"\0").decode()


# A checkpoint of an iterator that cuts holds this rank's rows: restored on the rank that wrote it, it
# gives the same next batches; rank 0's checkpoint read on another rank raises, naming both.
directory = shared_directory()
iterator = iter(mapped)
for k in range(17):  # past the batches in flight at the first update: those buffered now are cut
    train_step(next(iterator))
checkpoint = tf.train.Checkpoint(iterator=iterator)
path = checkpoint.write(os.path.join(directory, f"rank{rank}"))
after = [next(iterator).numpy() for _ in range(3)]
checkpoint.read(path)
again = [next(iterator).numpy() for _ in range(3)]
expect("batches after restoring a checkpoint", np.concatenate(again).ravel(), np.concatenate(after).ravel())
expect("batches after the checkpoint", np.concatenate(after).ravel(),
       np.concatenate([my_slice(k, 150) for k in (17, 18, 19)]))
matex.allreduce(tf.zeros([1]))  # every rank's checkpoint is written
if rank > 0:
    other = iter(mapped)
    tf.train.Checkpoint(iterator=other).read(os.path.join(directory, "rank0"))
    try:
        next(other)
        failures.append("rank 0's iterator checkpoint restored on another rank without an error")
    except RuntimeError as error:
        expect("the error names the ranks", all(w in str(error) for w in ("rank 0 of", f"rank {rank} of")), True)
matex.allreduce(tf.zeros([1]))
if rank == 0:
    shutil.rmtree(directory)

failed = matex.allreduce(tf.constant([float(len(failures))]), op="sum").numpy()[0]
for f in failures:
    print(f"rank {rank}: FAIL {f}", flush=True)
if rank == 0 and failed == 0:
    print(f"PASS: custom-loop sharding on {size} ranks", flush=True)
sys.exit(1 if failed else 0)
