"""A custom training loop in the style of TensorFlow's custom-training
tutorials: per-example losses (reduction=None) averaged with
tf.nn.compute_average_loss over GLOBAL_BATCH_SIZE (the last batch is
short), an L2 penalty through tf.nn.scale_regularization_loss, a Keras loss
with reduction="sum" divided by the batch size in a second model's step,
tf.train.CheckpointManager saving every epoch, and a restore of the latest
checkpoint into a fresh model that is then evaluated.

Under MATEX_ENABLE=1 each rank holds a slice of every batch: the loss written
for the global batch must give one process's gradient and value, and the
checkpoints must be written once, by rank 0, and restore on every rank."""
import numpy as np
import tensorflow as tf
import keras

GLOBAL_BATCH_SIZE = 32
rng = np.random.default_rng(8)
images = rng.normal(size=(208, 12)).astype("float32")  # 6 full batches and one of 16 rows
labels = (images[:, :4].sum(axis=1) > 0).astype("int32")
dataset = tf.data.Dataset.from_tensor_slices((images, labels)).shuffle(208, seed=2).batch(GLOBAL_BATCH_SIZE)


def build():
    return keras.Sequential([keras.Input(shape=(12,)),
                             keras.layers.Dense(16, activation="relu", kernel_regularizer=keras.regularizers.L2(1e-3)),
                             keras.layers.Dense(2)])


keras.utils.set_random_seed(6)
model = build()
optimizer = keras.optimizers.Adam(0.01)
loss_object = keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction=None)
train_accuracy = keras.metrics.SparseCategoricalAccuracy(name="train_accuracy")

# A second model trained with a summed loss that the step divides by the batch size itself.
summed_model = build()
summed_optimizer = keras.optimizers.SGD(0.1)
summed_loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction="sum")


def compute_loss(labels, predictions, model_losses):
    per_example_loss = loss_object(labels, predictions)
    loss = tf.nn.compute_average_loss(per_example_loss, global_batch_size=GLOBAL_BATCH_SIZE)
    if model_losses:
        loss += tf.nn.scale_regularization_loss(tf.add_n(model_losses))
    return loss


@tf.function
def train_step(x, y):
    with tf.GradientTape() as tape:
        predictions = model(x, training=True)
        loss = compute_loss(y, predictions, model.losses)
    gradients = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(gradients, model.trainable_variables))
    train_accuracy.update_state(y, predictions)
    with tf.GradientTape() as tape:
        loss_of_sum = summed_loss(y, summed_model(x, training=True)) / GLOBAL_BATCH_SIZE
    gradients = tape.gradient(loss_of_sum, summed_model.trainable_variables)
    summed_optimizer.apply_gradients(zip(gradients, summed_model.trainable_variables))
    return loss, loss_of_sum


checkpoint = tf.train.Checkpoint(optimizer=optimizer, model=model)
manager = tf.train.CheckpointManager(checkpoint, "./tf_ckpts", max_to_keep=2)
for epoch in range(3):
    total_loss, total_summed, batches = 0.0, 0.0, 0
    for x, y in dataset:
        loss, loss_of_sum = train_step(x, y)
        total_loss += float(loss)
        total_summed += float(loss_of_sum)
        batches += 1
    saved = manager.save()
    print(f"epoch {epoch}: mean loss {total_loss / batches:.6f}, summed-loss model {total_summed / batches:.6f}, "
          f"accuracy {float(train_accuracy.result()):.4f}, saved {saved}")
    train_accuracy.reset_state()
print("checkpoints kept:", manager.checkpoints)
assert len(manager.checkpoints) == 2 and manager.latest_checkpoint.endswith("ckpt-3"), manager.checkpoints

restored = build()
status = tf.train.Checkpoint(model=restored).restore(tf.train.latest_checkpoint("./tf_ckpts"))
status.expect_partial()
test_loss = keras.metrics.Mean(name="restored_loss")
test_accuracy = keras.metrics.SparseCategoricalAccuracy(name="restored_accuracy")
for x, y in dataset:
    predictions = restored(x, training=False)
    test_loss.update_state(loss_object(y, predictions))
    test_accuracy.update_state(y, predictions)
print(f"restored model: loss {float(test_loss.result()):.6f}, accuracy {float(test_accuracy.result()):.4f}")
