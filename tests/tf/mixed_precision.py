"""Mixed precision as the Keras guide writes it: a mixed_float16 policy, the
output softmax in float32, and a dynamic LossScaleOptimizer whose first loss
scale (2**40) overflows float16, so that the first steps are skipped and the
scale halves until the gradients are finite. A callback puts the loss scale
and the optimizer's update count into fit's logs. A BatchNormalization layer,
and a last batch that splits unevenly.

Under MATEX_ENABLE=1 the same steps must be skipped and the scale must follow
the same sequence as in one process (each example's gradient must have one
process's magnitude when float16 overflows), and the weights must follow."""
import numpy as np
import keras

rng = np.random.default_rng(0)
x = rng.normal(size=(250, 20)).astype("float32")  # the last batch of 26 rows: uneven slices on 4 ranks
y = (x[:, :3].sum(axis=1) > 0).astype("int32")


class LossScaleInLogs(keras.callbacks.Callback):
    def __init__(self, optimizer):
        super().__init__()
        self.optimizer = optimizer

    def on_train_batch_end(self, batch, logs=None):
        logs["loss_scale"] = float(self.optimizer.dynamic_scale.numpy())
        logs["updates"] = int(self.optimizer.iterations.numpy())


def build():
    return keras.Sequential([keras.Input(shape=(20,)), keras.layers.Dense(64, activation="relu"),
                             keras.layers.BatchNormalization(), keras.layers.Dense(64, activation="relu"),
                             keras.layers.Dense(2), keras.layers.Activation("softmax", dtype="float32")])


keras.mixed_precision.set_global_policy("mixed_float16")
keras.utils.set_random_seed(1)
model = build()
optimizer = keras.optimizers.LossScaleOptimizer(keras.optimizers.Adam(0.01), initial_scale=2**40,
                                                dynamic_growth_steps=4)
model.compile(optimizer=optimizer, loss="sparse_categorical_crossentropy", metrics=["accuracy"])
model.fit(x, y, batch_size=32, epochs=4, verbose=2, callbacks=[LossScaleInLogs(optimizer)])
print("float16: loss scale", float(optimizer.dynamic_scale.numpy()), "after",
      int(optimizer.iterations.numpy()), "applied steps")
