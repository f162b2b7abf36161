"""A model without an Input layer (built lazily in its first step), seeded
differently on every rank on purpose, and fit/evaluate called with positional
arguments: MATEX_ENABLE=1 must still start every rank from rank 0's weights
(the first update broadcasts them) and honour the arguments' positions."""
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
