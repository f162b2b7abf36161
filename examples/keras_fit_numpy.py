"""Keras fit on NumPy arrays, with validation_split, ModelCheckpoint and
EarlyStopping: a plain TensorFlow script (run it with
MATEX_ENABLE=1 mpirun -np N python keras_fit_numpy.py to train data-parallel)."""
import os
import tempfile

import numpy as np
import keras

rng = np.random.default_rng(7)
x = rng.normal(size=(2000, 20)).astype("float32")
w = rng.normal(size=(20, 1)).astype("float32")
y = (x @ w + 0.1 * rng.normal(size=(2000, 1)) > 0).astype("float32")

keras.utils.set_random_seed(1)
model = keras.Sequential([
    keras.Input(shape=(20,)),
    keras.layers.Dense(32, activation="relu"),
    keras.layers.Dense(16, activation="relu"),
    keras.layers.Dense(1, activation="sigmoid"),
])
model.compile(optimizer=keras.optimizers.Adam(1e-3), loss="binary_crossentropy", metrics=["accuracy"])
checkpoint = os.path.join(tempfile.mkdtemp(), "best.keras")
history = model.fit(x, y, batch_size=64, epochs=3, validation_split=0.2, verbose=2,
                    callbacks=[keras.callbacks.ModelCheckpoint(checkpoint, save_best_only=True),
                               keras.callbacks.EarlyStopping(patience=2)])
print("final loss %.6f val_loss %.6f" % (history.history["loss"][-1], history.history["val_loss"][-1]))
