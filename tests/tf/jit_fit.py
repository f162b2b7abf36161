"""Keras fit and evaluate with compile(jit_compile=True): XLA compiles the
train and test steps in the plain run, and under MATEX_ENABLE=1 it must
compile them with matex's collectives inside (the gradient allreduce,
BatchNormalization's global moments, the metrics' summed states) and draw
Dropout's mask for the global batch, so that N ranks follow the plain XLA
run. Batches of 18 rows (9 + 9 on 2 ranks, 4 + 5 + 4 + 5 on 4), one shape
for XLA to compile per step function."""
import numpy as np
import keras

rng = np.random.default_rng(5)
x = rng.normal(size=(108, 6)).astype("float32")
y = (x @ rng.normal(size=(6, 1)) > 0).astype("float32")
keras.utils.set_random_seed(11)
model = keras.Sequential([
    keras.Input(shape=(6,)),
    keras.layers.Dense(12, use_bias=False),  # a bias before BatchNormalization has no gradient but noise
    keras.layers.BatchNormalization(),
    keras.layers.Activation("relu"),
    keras.layers.Dropout(0.3),
    keras.layers.Dense(1, activation="sigmoid"),
])
model.compile(optimizer=keras.optimizers.Adam(0.01), loss="binary_crossentropy", metrics=["accuracy"],
              jit_compile=True)
history = model.fit(x, y, batch_size=18, epochs=3, shuffle=False, validation_split=1 / 6, verbose=0)
print("loss", history.history["loss"][-1], "val_loss", history.history["val_loss"][-1])
print("evaluate", model.evaluate(x, y, batch_size=18, verbose=0))
