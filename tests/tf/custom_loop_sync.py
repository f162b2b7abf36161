"""MATEX_ENABLE=1 with a custom training loop (GradientTape, a tf.function
step, optimizer.apply_gradients): every rank starts from different values on
purpose; after the first step all must hold rank 0's start minus the step of
the averaged gradient, computed here by hand. Exits non-zero otherwise."""
import sys

import numpy as np
import tensorflow as tf
import keras

import matex

rank, size = matex.rank(), matex.size()
v = tf.Variable(np.full(4, 10.0 * (rank + 1), np.float32))  # differs per rank until matex syncs it
optimizer = keras.optimizers.SGD(0.5)


@tf.function
def step(x):
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(v * x)
    grads = tape.gradient(loss, [v])
    optimizer.apply_gradients(zip(grads, [v]))


for k in range(2):
    step(tf.constant(np.full(4, float(rank + 1 + k), np.float32)))
mean_gradient = [np.mean([r + 1 + k for r in range(size)]) for k in range(2)]
want = 10.0 - 0.5 * sum(mean_gradient)  # rank 0's start, then two averaged steps
everyone = matex.allgather(tf.reshape(v, [1, 4])).numpy()
ok = np.allclose(everyone, want, rtol=0, atol=1e-6)
if rank == 0:
    print(("PASS" if ok else "FAIL") + f": custom loop on {size} ranks, every rank holds {everyone[:, 0]} (want {want})",
          flush=True)
sys.exit(0 if ok else 1)
