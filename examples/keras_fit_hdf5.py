"""Keras fit on an HDF5 file read with matex.data: a plain TensorFlow script
that, under MATEX_ENABLE=1 mpirun -np N, has each rank read only its rows of
every global batch from the file (the global batches, and so the loss curve,
are those of one process).

The file (2000 images of 8x8 and their labels) is written on first use, to
$MATEX_EXAMPLE_HDF5 or the temporary directory; every process writes the same
bytes to a file of its own and renames it into place, so ranks never race.
"""
import os
import tempfile

import numpy as np
import tensorflow as tf
import keras

import matex.data as md


def write_data(path):
    rng = np.random.default_rng(5)
    images = rng.random((2000, 8, 8, 1), dtype=np.float32)
    labels = (images.reshape(2000, -1).mean(axis=1) > 0.5).astype("int64") + (images[:, 0, 0, 0] > 0.8)
    import h5py
    mine = f"{path}.{os.getpid()}"
    with h5py.File(mine, "w") as f:
        f["images"], f["labels"] = images, labels
    os.replace(mine, path)


path = os.environ.get("MATEX_EXAMPLE_HDF5", os.path.join(tempfile.gettempdir(), "matex_example_train.h5"))
if not os.path.exists(path):
    write_data(path)
train = md.rows(md.hdf5(path, "images"), md.hdf5(path, "labels"), batch_size=64, shuffle=True, seed=1)

keras.utils.set_random_seed(3)
model = keras.Sequential([
    keras.Input(shape=(8, 8, 1)),
    keras.layers.Conv2D(8, 3, activation="relu"),
    keras.layers.Flatten(),
    keras.layers.Dense(3, activation="softmax"),
])
model.compile(optimizer=keras.optimizers.SGD(0.05, momentum=0.9), loss="sparse_categorical_crossentropy",
              metrics=["accuracy"])
history = model.fit(train, epochs=2, verbose=2)
print("final loss %.6f accuracy %.6f" % (history.history["loss"][-1], history.history["accuracy"][-1]))
print("evaluate:", model.evaluate(md.rows(md.hdf5(path, "images"), md.hdf5(path, "labels"), batch_size=100,
                                          shuffle=False), verbose=0))
