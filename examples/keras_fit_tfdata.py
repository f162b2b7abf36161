"""Keras fit on a tf.data pipeline with shuffle(seed) and map: a plain
TensorFlow script (MATEX_ENABLE=1 mpirun -np N python keras_fit_tfdata.py
trains it data-parallel)."""
import numpy as np
import tensorflow as tf
import keras

rng = np.random.default_rng(11)
images = rng.integers(0, 256, size=(1200, 8, 8, 1)).astype("uint8")
labels = (images.reshape(1200, -1).mean(axis=1) > 127.5).astype("int64") + (images[:, 0, 0, 0] > 200)


def normalize(image, label):
    return tf.cast(image, tf.float32) / 255.0, label


dataset = (tf.data.Dataset.from_tensor_slices((images, labels))
           .shuffle(1200, seed=3, reshuffle_each_iteration=True)
           .map(normalize)
           .batch(50))

keras.utils.set_random_seed(2)
model = keras.Sequential([
    keras.Input(shape=(8, 8, 1)),
    keras.layers.Conv2D(8, 3, activation="relu"),
    keras.layers.Flatten(),
    keras.layers.Dense(3, activation="softmax"),
])
model.compile(optimizer=keras.optimizers.SGD(0.05, momentum=0.9), loss="sparse_categorical_crossentropy",
              metrics=["accuracy"])
history = model.fit(dataset, epochs=2, verbose=2)
print("final loss %.6f accuracy %.6f" % (history.history["loss"][-1], history.history["accuracy"][-1]))
