"""GoogLeNet (Inception v1, Szegedy et al., 2014), defined here with its nine
inception modules and dropout, trained with Keras fit on small synthetic
images (64x64). The last batch is smaller than the others. A plain TensorFlow
script (run it with MATEX_ENABLE=1 mpirun -np N python googlenet.py)."""
import numpy as np
import keras
from keras import layers


def inception(x, c1, c3r, c3, c5r, c5, pool):
    branch1 = layers.Conv2D(c1, 1, activation="relu")(x)
    branch3 = layers.Conv2D(c3r, 1, activation="relu")(x)
    branch3 = layers.Conv2D(c3, 3, padding="same", activation="relu")(branch3)
    branch5 = layers.Conv2D(c5r, 1, activation="relu")(x)
    branch5 = layers.Conv2D(c5, 5, padding="same", activation="relu")(branch5)
    branch_pool = layers.MaxPooling2D(3, strides=1, padding="same")(x)
    branch_pool = layers.Conv2D(pool, 1, activation="relu")(branch_pool)
    return layers.Concatenate()([branch1, branch3, branch5, branch_pool])


def googlenet(input_shape, classes):
    inputs = keras.Input(shape=input_shape)
    x = layers.Conv2D(64, 7, strides=2, padding="same", activation="relu")(inputs)
    x = layers.MaxPooling2D(3, strides=2, padding="same")(x)
    x = layers.Conv2D(64, 1, activation="relu")(x)
    x = layers.Conv2D(192, 3, padding="same", activation="relu")(x)
    x = layers.MaxPooling2D(3, strides=2, padding="same")(x)
    x = inception(x, 64, 96, 128, 16, 32, 32)     # 3a
    x = inception(x, 128, 128, 192, 32, 96, 64)   # 3b
    x = layers.MaxPooling2D(3, strides=2, padding="same")(x)
    x = inception(x, 192, 96, 208, 16, 48, 64)    # 4a
    x = inception(x, 160, 112, 224, 24, 64, 64)   # 4b
    x = inception(x, 128, 128, 256, 24, 64, 64)   # 4c
    x = inception(x, 112, 144, 288, 32, 64, 64)   # 4d
    x = inception(x, 256, 160, 320, 32, 128, 128)  # 4e
    x = layers.MaxPooling2D(3, strides=2, padding="same")(x)
    x = inception(x, 256, 160, 320, 32, 128, 128)  # 5a
    x = inception(x, 384, 192, 384, 48, 128, 128)  # 5b
    x = layers.GlobalAveragePooling2D()(x)
    x = layers.Dropout(0.4)(x)
    outputs = layers.Dense(classes, activation="softmax")(x)
    return keras.Model(inputs, outputs, name="googlenet")


# Synthetic images with something to learn: each class has a pattern, each image is its class's pattern plus noise.
rng = np.random.default_rng(12)
patterns = rng.normal(size=(10,) + (64, 64, 3)).astype("float32")
y = rng.integers(0, 10, size=(170,))
x = patterns[y] + rng.normal(size=(170,) + (64, 64, 3)).astype("float32")

# float64: a step-by-step comparison of float32 runs of this deep ReLU network drowns in rounding
# (a unit's sign flips under a 1e-7 perturbation and small biases then differ by 1e-4 to 1e-3, as
# they do between two one-process runs that sum in a different order); see docs/tensorflow.md.
keras.config.set_floatx("float64")
keras.utils.set_random_seed(1)
model = googlenet((64, 64, 3), 10)
model.compile(optimizer=keras.optimizers.SGD(0.0002, momentum=0.9), loss="sparse_categorical_crossentropy",
              metrics=["accuracy"])
history = model.fit(x, y, batch_size=16, epochs=1, verbose=2)
print("final loss %.6f" % history.history["loss"][-1])
