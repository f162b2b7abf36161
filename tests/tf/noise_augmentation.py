"""Random layers inside the model, drawn for the batch: RandomFlip,
RandomTranslation and RandomContrast augmentation, GaussianNoise,
GaussianDropout and SpatialDropout2D, and a keras.random draw of the batch's
shape in a custom layer. Under MATEX_ENABLE=1 every rank must draw exactly
the numbers of its rows of the global batch. matex.verify compares the
plain run with N ranks."""
import numpy as np
import keras

rng = np.random.default_rng(17)
images = rng.uniform(size=(160, 12, 12, 3)).astype("float32")
labels = rng.integers(0, 4, size=(160,)).astype("int32")


class Jitter(keras.layers.Layer):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.seed_generator = keras.random.SeedGenerator(9)

    def call(self, x, training=False):
        if not training:
            return x
        return x + 0.05 * keras.random.uniform(keras.ops.shape(x), seed=self.seed_generator)


keras.utils.set_random_seed(8)
model = keras.Sequential([
    keras.Input(shape=(12, 12, 3)),
    keras.layers.RandomFlip("horizontal"),
    keras.layers.RandomTranslation(0.1, 0.1),
    keras.layers.RandomContrast(0.2),
    keras.layers.GaussianNoise(0.1),
    keras.layers.Conv2D(8, 3, activation="relu"),
    keras.layers.SpatialDropout2D(0.2),
    keras.layers.GlobalAveragePooling2D(),
    Jitter(),
    keras.layers.GaussianDropout(0.2),
    keras.layers.Dense(4),
])
model.compile(optimizer=keras.optimizers.SGD(0.05), metrics=["accuracy"],
              loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
history = model.fit(images, labels, batch_size=24, epochs=2, verbose=0)  # 7 batches, the last of 16
print("loss", history.history["loss"])
