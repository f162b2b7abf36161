"""Under MATEX_ENABLE=1 the ranks build different models (rank 1's hidden
layer is wider): fit must end with an error naming the first variable that
differs, on every rank, instead of waiting for collectives that never match."""
import numpy as np
import keras

import matex

width = 8 if matex.rank() == 0 else 9
model = keras.Sequential([keras.Input(shape=(4,)), keras.layers.Dense(width, name="hidden"), keras.layers.Dense(1)])
model.compile(optimizer="sgd", loss="mse")
model.fit(np.ones((16, 4), "float32"), np.ones((16, 1), "float32"), batch_size=8, epochs=1, verbose=0)
print("fit returned: the mismatch went unnoticed", flush=True)
