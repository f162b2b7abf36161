"""Under MATEX_ENABLE=1 the script draws its data from an unseeded generator,
so every rank holds different arrays: fit must stop on every rank with an
error naming the argument, instead of training on a silent mixture."""
import numpy as np
import keras

rng = np.random.default_rng()  # no seed: differs per process
x = rng.normal(size=(64, 4)).astype("float32")
y = np.ones((64, 1), "float32")  # the same everywhere: the error must name x
model = keras.Sequential([keras.Input(shape=(4,)), keras.layers.Dense(1)])
model.compile(optimizer="sgd", loss="mse")
model.fit(x, y, batch_size=16, epochs=1, verbose=0)
print("fit returned: the different data went unnoticed", flush=True)
