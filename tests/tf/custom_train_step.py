"""The Keras guide's way to customise fit: a Model subclass with its own
train_step (GradientTape, optimizer.apply, its own loss tracker and metric,
returning {m.name: m.result()}). Batches of 10 from 62 rows on 3 ranks cut
3/3/4, and the last batch of 2 cuts 0/1/1: rank 0's slice is empty, and its
loss tracker (weighted by its batch size, 0) must add nothing, not NaN. The script also probes for
TensorFlow with importlib.util.find_spec before importing it, as some
libraries do: matex must still activate. matex.verify compares 1 rank with N."""
import importlib.util

assert importlib.util.find_spec("tensorflow") is not None
import numpy as np  # noqa: E402
import keras  # noqa: E402
import tensorflow as tf  # noqa: E402


class Regressor(keras.Model):
    def __init__(self):
        super().__init__()
        self.hidden = keras.layers.Dense(8, activation="tanh")
        self.out = keras.layers.Dense(1)
        self.loss_tracker = keras.metrics.Mean(name="loss")
        self.mae = keras.metrics.MeanAbsoluteError(name="mae")

    def call(self, x):
        return self.out(self.hidden(x))

    def train_step(self, data):
        x, y = data
        with tf.GradientTape() as tape:
            prediction = self(x, training=True)
            loss = keras.ops.mean(keras.ops.square(prediction - y))
        grads = tape.gradient(loss, self.trainable_variables)
        self.optimizer.apply(grads, self.trainable_variables)
        self.loss_tracker.update_state(loss, sample_weight=keras.ops.shape(x)[0])
        self.mae.update_state(y, prediction)
        return {m.name: m.result() for m in self.metrics}

    @property
    def metrics(self):
        return [self.loss_tracker, self.mae]


rng = np.random.default_rng(9)
x = rng.normal(size=(62, 3)).astype("float32")
y = (x @ np.array([[1.0], [-2.0], [0.5]], "float32")).astype("float32")
keras.utils.set_random_seed(3)
model = Regressor()
model.build((None, 3))
model.compile(optimizer=keras.optimizers.SGD(0.05))
history = model.fit(x, y, batch_size=10, epochs=2, verbose=0, shuffle=False)
print("loss", history.history["loss"], "mae", history.history["mae"])
