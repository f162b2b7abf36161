"""Run under MATEX_ENABLE=1 on 2 ranks: what activation cannot make exact
must say so, once, naming the loss or op, and what it can must not warn.

- Per-example losses (reduction=None) that the script reduces itself. A
  mean, or tf.nn.compute_average_loss, is exact and must not warn; a sum
  divided by the script's own batch size gives 1/N of one process's
  gradient: it warns once, naming the loss. Checked in a traced step (where
  matex reads the graph) and eagerly (where any reduction other than
  compute_average_loss warns).
- A random draw whose row count is computed from a batch's size (2 *
  batch_size): matex cannot tell which rows are the rank's. A draw for the
  batch's shape, or a concatenation of batch-sized tensors, is exact and
  must not warn."""
import warnings

import numpy as np
import tensorflow as tf
import keras

BATCH = 16
rng = np.random.default_rng(3)
x = rng.normal(size=(64, 4)).astype("float32")
y = rng.integers(0, 3, size=(64,)).astype("int32")
dataset = tf.data.Dataset.from_tensor_slices((x, y)).batch(BATCH)
model = keras.Sequential([keras.Input(shape=(4,)), keras.layers.Dense(3)])
optimizer = keras.optimizers.SGD(0.1)
per_example = keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction=None, name="per_example_ce")


def make_step(reduce):
    @tf.function
    def step(features, labels):
        with tf.GradientTape() as tape:
            loss = reduce(per_example(labels, model(features, training=True)))
        optimizer.apply_gradients(zip(tape.gradient(loss, model.trainable_variables), model.trainable_variables))
        return loss
    return step


def messages(step, epochs=2):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(epochs):
            for features, labels in dataset:
                step(features, labels)
    return [str(w.message) for w in caught if "reduction=None" in str(w.message)]


exact = [make_step(tf.reduce_mean), make_step(lambda l: tf.nn.compute_average_loss(l, global_batch_size=BATCH))]
for step in exact:
    assert messages(step) == [], "a mean or compute_average_loss must not warn"
summed = messages(make_step(lambda l: tf.reduce_sum(l) / BATCH))
assert len(summed) == 1 and "'per_example_ce'" in summed[0], summed
print("traced sum warned once:", summed[0][:100])

# Eagerly (a second loss object, whose name is not yet warned about).
per_example = keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction=None, name="eager_ce")
eager_exact = messages(make_step(lambda v: tf.nn.compute_average_loss(v, global_batch_size=BATCH)).python_function)
assert eager_exact == [], eager_exact
eager_sum = messages(make_step(lambda v: tf.reduce_sum(v) / BATCH).python_function)
assert len(eager_sum) == 1 and "'eager_ce'" in eager_sum[0], eager_sum
print("eager sum warned once")


def drawn_warnings(draw):
    # A signature whose batch size is open, as in TensorFlow's Transformer tutorial: matex reads the draw's
    # shape from the graph (with a fixed batch size TensorFlow folds it into a constant).
    @tf.function(input_signature=[tf.TensorSpec([None, 4], tf.float32)])
    def step(features):
        return draw(features)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for features, _ in dataset:
            step(features)
    return [str(w.message) for w in caught if "random op" in str(w.message)]


assert drawn_warnings(lambda f: tf.random.uniform(tf.shape(tf.concat([f, f], 0)))) == []
assert drawn_warnings(lambda f: keras.random.normal(keras.ops.shape(f))) == []
doubled = drawn_warnings(lambda f: tf.random.uniform((2 * tf.shape(f)[0], 1)))
assert len(doubled) == 1 and "random_uniform" in doubled[0], doubled
print("a draw of 2 * batch_size rows warned once:", doubled[0][:90])
print("PASS")
