"""MATEX_ENABLE=1 leaves TensorFlow without a global seed (plain semantics),
yet where plain TensorFlow would draw a nondeterministic seed every rank
must draw the same: an unseeded tf.data shuffle, unseeded tf.random ops
eagerly and in a tf.function, and Keras' default seeds. Ops with a seed of
their own keep plain TensorFlow's seeds (the default graph seed with the op
seed): compared with stateless draws from those seeds. Exits non-zero,
naming what differs, otherwise."""
import sys

import numpy as np
import tensorflow as tf
import keras

import matex
from tensorflow.python.framework import random_seed

rank, size = matex.rank(), matex.size()
failures = []


def same_on_every_rank(what, values):
    values = tf.reshape(tf.cast(values, tf.float64), [1, -1])
    everyone = matex.allgather(values).numpy()
    for r in range(1, size):
        if not np.array_equal(everyone[r], everyone[0]):
            failures.append(f"{what}: rank {r} drew {everyone[r][:4]}..., rank 0 {everyone[0][:4]}...")


order = [int(v) for v in tf.data.Dataset.range(50).shuffle(50)]
same_on_every_rank("unseeded tf.data shuffle", order)
if sorted(order) != list(range(50)):
    failures.append(f"the shuffle lost or repeated rows: {order}")
same_on_every_rank("unseeded tf.random.uniform, eagerly", tf.random.uniform([8]))
same_on_every_rank("unseeded tf.random.normal, eagerly (second draw)", tf.random.normal([8]))


@tf.function
def draw():
    return tf.random.uniform([8]) + tf.random.shuffle(tf.range(8, dtype=tf.float32))


same_on_every_rank("unseeded tf.random ops in a tf.function, first call", draw())
same_on_every_rank("unseeded tf.random ops in a tf.function, second call", draw())
same_on_every_rank("keras.random.normal without a seed", keras.random.normal([8]))
same_on_every_rank("a Keras layer's default seed", [keras.layers.Dropout(0.5).seed_generator.state.numpy()[0]])

# Plain TensorFlow's seeds where the script gives an op seed and no global seed.
if random_seed.get_seed(7) != (random_seed.DEFAULT_GRAPH_SEED, 7):
    failures.append(f"an op seed of 7 without a global seed gave seeds {random_seed.get_seed(7)}, plain TensorFlow "
                    f"({random_seed.DEFAULT_GRAPH_SEED}, 7)")
tf.random.set_seed(3)
if random_seed.get_seed(None)[0] != 3:
    failures.append(f"after tf.random.set_seed(3) an unseeded op got seeds {random_seed.get_seed(None)}")
same_on_every_rank("after tf.random.set_seed(3), tf.random.uniform", tf.random.uniform([8]))

for failure in failures:
    print(f"rank {rank}: FAIL: {failure}", flush=True)
if rank == 0 and not failures:
    print(f"PASS: {size} ranks drew alike without seeds; seeded ops keep plain TensorFlow's seeds")
sys.exit(1 if failures else 0)
