"""A tf_keras (Keras 2) script: fit with a current optimizer, a legacy one and
a loss-scale optimizer, on a model with BatchNormalization and Dropout. Under
MATEX_ENABLE=1 every rank computes the whole batch (tf_keras is not sharded)
and the optimizers reduce the gradients, so N ranks follow one process. Ranks
other than 0 perturb their starting weights on purpose: the broadcast before
fit must undo that (an evaluate on every rank checks the moving statistics too)."""
import os

import numpy as np
import tf_keras as keras

rng = np.random.default_rng(5)
x = rng.normal(size=(256, 10)).astype("float32")
y = (x[:, :3].sum(axis=1, keepdims=True) > 0).astype("float32")

keras.utils.set_random_seed(2)
for optimizer in (keras.optimizers.SGD(0.05, momentum=0.9), keras.optimizers.legacy.Adam(1e-3),
                  keras.mixed_precision.LossScaleOptimizer(keras.optimizers.SGD(0.05))):
    model = keras.Sequential([
        keras.Input(shape=(10,)),
        keras.layers.Dense(16, activation="relu"),
        keras.layers.BatchNormalization(),
        keras.layers.Dropout(0.2),
        keras.layers.Dense(1, activation="sigmoid"),
    ])
    if int(os.environ.get("OMPI_COMM_WORLD_RANK", "0")) > 0:
        model.set_weights([w + 0.5 for w in model.get_weights()])
    model.compile(optimizer=optimizer, loss="binary_crossentropy", metrics=["accuracy"])
    model.fit(x, y, batch_size=32, epochs=2, validation_split=0.25, verbose=2)
    print("evaluate:", model.evaluate(x, y, verbose=0), flush=True)
