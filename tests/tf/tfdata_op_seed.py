"""A tf.data pipeline shuffled with an op-level seed, built before the script
seeds (keras.utils.set_random_seed comes later, before the model): plain
TensorFlow shuffles with its default graph seed and the op seed, and so must
every rank under MATEX_ENABLE=1, or the batches differ from the plain run's.
matex.verify compares the plain run with N ranks."""
import numpy as np
import tensorflow as tf
import keras

rng = np.random.default_rng(11)
x = rng.normal(size=(640, 8)).astype("float32")
y = (x @ rng.normal(size=(8, 1)) > 0).astype("float32")
train = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(640, seed=4).batch(32)

keras.utils.set_random_seed(6)
model = keras.Sequential([keras.Input(shape=(8,)), keras.layers.Dense(16, activation="relu"),
                          keras.layers.Dense(1, activation="sigmoid")])
model.compile(optimizer=keras.optimizers.SGD(0.1), loss="binary_crossentropy", metrics=["accuracy"])
history = model.fit(train, epochs=1, verbose=0)
print("loss after 20 steps %.6f" % history.history["loss"][-1])
print("evaluate:", model.evaluate(train.take(4), verbose=0))
