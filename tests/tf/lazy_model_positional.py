"""A model without an Input layer (built lazily in its first step), seeded
differently on every rank on purpose, and fit/evaluate called with positional
arguments: MATEX_ENABLE=1 must still start every rank from rank 0's weights
(the first update broadcasts them) and honour the arguments' positions; and a
second such model on a tf.data input that reshuffles every epoch, which
building the model must not draw from."""
import os

import numpy as np
import keras

rank = int(os.environ.get("OMPI_COMM_WORLD_RANK", "0"))
rng = np.random.default_rng(4)
x = rng.normal(size=(96, 5)).astype("float32")
y = (x[:, :1] * 2 - x[:, 1:2]).astype("float32")
keras.utils.set_random_seed(100 + rank)  # differs per rank: only matex's broadcast makes them agree
model = keras.Sequential([keras.layers.Dense(8, activation="relu"), keras.layers.Dense(1)])
model.compile(keras.optimizers.Adam(0.01), "mse")
# batch_size, epochs, verbose by position; no shuffling (its generator is seeded per rank here)
history = model.fit(x, y, 24, 2, 0, shuffle=False)
print("evaluate", model.evaluate(x, y, 24, 0))

# A tf.data input that reshuffles every epoch, into another model built in its first step: building it
# before the first step must take nothing from the input, or the first epoch would see the order the
# plain run sees second (a fresh iterator reshuffles).
import tensorflow as tf

keras.utils.set_random_seed(7)  # the same on every rank from here: one order of the data everywhere
data = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(96, seed=3, reshuffle_each_iteration=True).batch(24)
second = keras.Sequential([keras.layers.Dense(4, activation="tanh"), keras.layers.Dense(1)])
second.compile(keras.optimizers.SGD(0.05), "mse")
print("reshuffled input, losses", second.fit(data, epochs=2, verbose=0).history["loss"])
