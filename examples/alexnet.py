"""AlexNet (Krizhevsky et al., 2012), defined here, trained with Keras fit on
small synthetic images (64x64): a plain TensorFlow script (run it with
MATEX_ENABLE=1 mpirun -np N python alexnet.py to train data-parallel)."""
import numpy as np
import keras
from keras import layers

# Synthetic images with something to learn: each class has a pattern, each image is its class's pattern plus noise.
rng = np.random.default_rng(11)
patterns = rng.normal(size=(10,) + (64, 64, 3)).astype("float32")
y = rng.integers(0, 10, size=(160,))
x = patterns[y] + rng.normal(size=(160,) + (64, 64, 3)).astype("float32")

# float64: a step-by-step comparison of float32 runs of this deep ReLU network drowns in rounding
# (a unit's sign flips under a 1e-7 perturbation and small biases then differ by 1e-4 to 1e-3, as
# they do between two one-process runs that sum in a different order); see docs/tensorflow.md.
keras.config.set_floatx("float64")
keras.utils.set_random_seed(1)
model = keras.Sequential([
    keras.Input(shape=(64, 64, 3)),
    layers.Conv2D(96, 11, strides=4, padding="same", activation="relu"),
    layers.MaxPooling2D(3, strides=2),
    layers.Conv2D(256, 5, padding="same", activation="relu"),
    layers.MaxPooling2D(3, strides=2),
    layers.Conv2D(384, 3, padding="same", activation="relu"),
    layers.Conv2D(384, 3, padding="same", activation="relu"),
    layers.Conv2D(256, 3, padding="same", activation="relu"),
    layers.MaxPooling2D(3, strides=2, padding="same"),
    layers.Flatten(),
    layers.Dense(4096, activation="relu"),
    layers.Dropout(0.5),
    layers.Dense(4096, activation="relu"),
    layers.Dropout(0.5),
    layers.Dense(10, activation="softmax"),
])
model.compile(optimizer=keras.optimizers.SGD(0.002, momentum=0.9), loss="sparse_categorical_crossentropy",
              metrics=["accuracy"])
history = model.fit(x, y, batch_size=16, epochs=1, verbose=2)
print("final loss %.6f" % history.history["loss"][-1])
