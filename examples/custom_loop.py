"""A custom training loop: a tf.data pipeline, GradientTape in a tf.function
and optimizer.apply_gradients, on a small convolutional model with
BatchNormalization and Dropout. A plain TensorFlow script (run it with
MATEX_ENABLE=1 mpirun -np N python custom_loop.py to train data-parallel)."""
import numpy as np
import tensorflow as tf
import keras

rng = np.random.default_rng(3)
images = rng.normal(size=(400, 16, 16, 3)).astype("float32")
labels = rng.integers(0, 5, size=(400,)).astype("int32")
dataset = tf.data.Dataset.from_tensor_slices((images, labels)).shuffle(400, seed=5).batch(32)

keras.utils.set_random_seed(1)
model = keras.Sequential([
    keras.Input(shape=(16, 16, 3)),
    keras.layers.Conv2D(16, 3, padding="same"),
    keras.layers.BatchNormalization(),
    keras.layers.ReLU(),
    keras.layers.MaxPooling2D(),
    keras.layers.Conv2D(32, 3, padding="same", activation="relu"),
    keras.layers.GlobalAveragePooling2D(),
    keras.layers.Dropout(0.3),
    keras.layers.Dense(5),
])
loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
optimizer = keras.optimizers.SGD(0.05, momentum=0.9)


@tf.function
def train_step(x, y):
    with tf.GradientTape() as tape:
        loss = loss_fn(y, model(x, training=True))
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss


for epoch in range(2):
    for step, (x, y) in enumerate(dataset):
        loss = train_step(x, y)
    print(f"epoch {epoch}: last batch loss {float(loss):.6f}")
