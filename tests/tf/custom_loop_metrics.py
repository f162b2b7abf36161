"""A custom training loop that keeps keras.metrics itself, as the TF guide's
"training loop from scratch" does: Mean of the scalar loss and
SparseCategoricalAccuracy updated inside a tf.function after the optimizer
step, an eager validation loop with its own metrics, results read and reset
every epoch. 200 rows in batches of 22 (a short last batch of 2) slice
5/6/5/6 on 4 ranks, the last one 0/1/0/1 (empty slices); the first step of
every epoch runs on the whole batch. The
values the script reads must be the global ones: matex.verify records every
result() the script reads and compares the plain run with N ranks."""
import numpy as np
import tensorflow as tf
import keras

rng = np.random.default_rng(12)
features = rng.normal(size=(200, 10)).astype("float32")
labels = (features[:, :3].sum(axis=1) > 0).astype("int32") + (features[:, 3] > 1).astype("int32")
train = tf.data.Dataset.from_tensor_slices((features, labels)).shuffle(200, seed=2).batch(22)
validation = tf.data.Dataset.from_tensor_slices((features[:60], labels[:60])).batch(25)

keras.utils.set_random_seed(5)
model = keras.Sequential([keras.Input(shape=(10,)), keras.layers.Dense(16, activation="relu"), keras.layers.Dense(3)])
loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
optimizer = keras.optimizers.Adam(0.01)
train_loss = keras.metrics.Mean(name="train_loss")
train_accuracy = keras.metrics.SparseCategoricalAccuracy(name="train_accuracy")
val_loss = keras.metrics.Mean(name="val_loss")
val_accuracy = keras.metrics.SparseCategoricalAccuracy(name="val_accuracy")


@tf.function
def train_step(x, y):
    with tf.GradientTape() as tape:
        logits = model(x, training=True)
        loss = loss_fn(y, logits)
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    train_loss.update_state(loss)
    train_accuracy.update_state(y, logits)


for epoch in range(3):
    for x, y in train:
        train_step(x, y)
    for x, y in validation:  # eager, no training: every rank sees every batch
        logits = model(x, training=False)
        val_loss.update_state(loss_fn(y, logits))
        val_accuracy.update_state(y, logits)
    print(f"epoch {epoch}: loss {float(train_loss.result()):.6f} accuracy {float(train_accuracy.result()):.4f} "
          f"val_loss {float(val_loss.result()):.6f} val_accuracy {float(val_accuracy.result()):.4f}")
    for metric in (train_loss, train_accuracy, val_loss, val_accuracy):
        metric.reset_state()
