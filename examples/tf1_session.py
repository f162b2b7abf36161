"""A TF1 graph script: placeholders, tf.compat.v1.Session and
GradientDescentOptimizer.minimize, fed batch by batch (with MATEX_ENABLE=1
under mpirun each rank feeds its slice of every batch)."""
import numpy as np
import tensorflow as tf

tf.compat.v1.disable_eager_execution()
rng = np.random.default_rng(5)
features = rng.normal(size=(600, 10)).astype("float32")
targets = (features @ rng.normal(size=(10, 1)) + 0.5).astype("float32")

x = tf.compat.v1.placeholder(tf.float32, [None, 10])
y = tf.compat.v1.placeholder(tf.float32, [None, 1])
w1 = tf.compat.v1.get_variable("w1", [10, 16], initializer=tf.compat.v1.glorot_uniform_initializer(seed=1))
b1 = tf.compat.v1.get_variable("b1", [16], initializer=tf.compat.v1.zeros_initializer())
w2 = tf.compat.v1.get_variable("w2", [16, 1], initializer=tf.compat.v1.glorot_uniform_initializer(seed=2))
b2 = tf.compat.v1.get_variable("b2", [1], initializer=tf.compat.v1.zeros_initializer())
prediction = tf.matmul(tf.tanh(tf.matmul(x, w1) + b1), w2) + b2
loss = tf.reduce_mean(tf.square(prediction - y))
train = tf.compat.v1.train.GradientDescentOptimizer(0.05).minimize(loss)

with tf.compat.v1.Session() as session:
    session.run(tf.compat.v1.global_variables_initializer())
    for epoch in range(3):
        for begin in range(0, 600, 40):
            session.run(train, feed_dict={x: features[begin:begin + 40], y: targets[begin:begin + 40]})
        print("epoch %d loss %.6f" % (epoch, session.run(loss, feed_dict={x: features, y: targets})))
