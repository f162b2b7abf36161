"""A TF1 graph script that fetches its loss with the training op,
sess.run([train_op, loss]), as TF1 tutorials do, with
MomentumOptimizer.minimize and a fetched accuracy-like batch mean. Under
MATEX_ENABLE=1 each rank feeds its slice of every batch, yet the fetched
loss must be the global batch's, as one process prints it. matex.verify
records every scalar fetch and compares the plain run with N ranks."""
import numpy as np
import tensorflow as tf

tf.compat.v1.disable_eager_execution()
rng = np.random.default_rng(8)
features = rng.normal(size=(450, 6)).astype("float32")
targets = (features @ rng.normal(size=(6, 1)) + 0.25).astype("float32")

x = tf.compat.v1.placeholder(tf.float32, [None, 6])
y = tf.compat.v1.placeholder(tf.float32, [None, 1])
w1 = tf.compat.v1.get_variable("w1", [6, 12], initializer=tf.compat.v1.glorot_uniform_initializer(seed=3))
b1 = tf.compat.v1.get_variable("b1", [12], initializer=tf.compat.v1.zeros_initializer())
w2 = tf.compat.v1.get_variable("w2", [12, 1], initializer=tf.compat.v1.glorot_uniform_initializer(seed=4))
prediction = tf.matmul(tf.tanh(tf.matmul(x, w1) + b1), w2)
loss = tf.reduce_mean(tf.square(prediction - y))
close = tf.reduce_mean(tf.cast(tf.abs(prediction - y) < 0.5, tf.float32))
train_op = tf.compat.v1.train.MomentumOptimizer(0.02, momentum=0.9).minimize(loss)

with tf.compat.v1.Session() as session:
    session.run(tf.compat.v1.global_variables_initializer())
    for epoch in range(2):
        for begin in range(0, 450, 50):  # 9 batches of 50: slices 25/25 on 2 ranks, 12/13/12/13 on 4
            _, batch_loss, batch_close = session.run([train_op, loss, close],
                                                     feed_dict={x: features[begin:begin + 50],
                                                                y: targets[begin:begin + 50]})
        print("epoch %d: last batch loss %.6f, within 0.5: %.3f" % (epoch, batch_loss, batch_close))
