"""A custom loop whose step is tf.function(jit_compile=True), applies the
gradients and draws a Dropout mask: the plain run compiles the step with
XLA, and so must every rank under MATEX_ENABLE=1, with matex's allreduce
inside it (ops/xla_lowerings.cc) and the mask drawn by XLA's generator for
the global batch, each rank keeping its rows. The loop's first step of an
epoch runs on the whole batch and the next ones on slices (each a shape, and
layout values, XLA compiles for). matex.verify compares the plain run with N
ranks."""
import numpy as np
import tensorflow as tf
import keras

rng = np.random.default_rng(3)
x = rng.normal(size=(96, 5)).astype("float32")
y = rng.normal(size=(96, 1)).astype("float32")
ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(16)
keras.utils.set_random_seed(2)
model = keras.Sequential([keras.Input(shape=(5,)), keras.layers.Dense(8, activation="tanh"),
                           keras.layers.Dropout(0.25), keras.layers.Dense(1)])
opt = keras.optimizers.SGD(0.1)


@tf.function(jit_compile=True)
def step(x, y):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(model(x, training=True) - y))
    g = tape.gradient(loss, model.trainable_variables)
    opt.apply_gradients(zip(g, model.trainable_variables))
    return loss


for e in range(2):
    for a, b in ds:
        last = step(a, b)
print("loss", float(last))
