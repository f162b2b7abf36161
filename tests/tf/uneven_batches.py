"""Keras fit where global batches do not split evenly: 50 samples in batches of
16 on 3 ranks give slices of 5/5/6 and, for the last batch of 2, 0/1/1 (rank 0
gets nothing and must still take part). matex.verify compares it with 1 rank."""
import numpy as np, keras
rng = np.random.default_rng(3)
x = rng.normal(size=(50, 4)).astype("float32"); y = rng.normal(size=(50, 1)).astype("float32")
keras.utils.set_random_seed(5)
m = keras.Sequential([keras.Input((4,)), keras.layers.Dense(8, activation="tanh"), keras.layers.Dense(1)])
m.compile(keras.optimizers.SGD(0.1), "mse", metrics=["mae"])
h = m.fit(x, y, batch_size=16, epochs=3, verbose=0)
print("losses", ["%.7f" % v for v in h.history["loss"]], "mae", "%.7f" % h.history["mae"][-1], "w", "%.7f" % float(np.sum(m.get_weights()[0])))
print("evaluate", m.evaluate(x, y, batch_size=16, verbose=0))
