"""A script that distributes itself with a tf.distribute strategy: under
MATEX_ENABLE=1 matex must step aside (one warning) and leave its fit alone:
every rank then trains on all the data by itself."""
import warnings

import numpy as np
import tensorflow as tf
import keras

warnings.simplefilter("always")
x = np.random.default_rng(0).normal(size=(64, 3)).astype("float32")
y = x.sum(axis=1, keepdims=True)
strategy = tf.distribute.MirroredStrategy(["/cpu:0"])
with strategy.scope():
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    model.compile(keras.optimizers.SGD(0.1), "mse")
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    history = model.fit(x, y, batch_size=16, epochs=2, verbose=0)
said = any("steps aside" in str(w.message) for w in caught)
import matex  # noqa: E402  (only to know the rank for the message)
print(f"rank {matex.rank()}: steps aside said={said}, {len(history.history['loss'])} epochs", flush=True)
raise SystemExit(0 if said else 1)
