"""A Keras MNIST script in the shape of Horovod's published
tensorflow2_keras_mnist.py: hvd.init(), a sharded dataset, the learning rate
scaled by the number of ranks, hvd.DistributedOptimizer, the broadcast,
metric-average and warmup callbacks, a checkpoint that rank 0 writes, and
hvd.load_model to resume from it.

A callback of the test's own records the weights and momentum buffers before
and after every batch. Every rank then checks each step against Horovod's
semantics, computed in one process with plain Keras from the state the step
started from: the mean (float64) of every rank's gradient on its own shard,
applied by SGD with momentum at the warmup's rate, with Horovod's momentum
correction. Checking step by step, rather than only the end of training,
keeps rounding from being amplified into the comparison: a ReLU or a max-pool
choice that flips on the last bit changes everything after it. It also checks
the broadcast start, the rates, the epoch losses the callbacks averaged, and
the reloaded model. Usage: keras_mnist.py OUTPUT_FOLDER"""

import os
import sys

import keras
import numpy as np
import tensorflow as tf

import horovod.tensorflow.keras as hvd
from hvd_test_util import check_equal, check_moved, check_training_step, synthetic_mnist

out_dir = sys.argv[1]
hvd.init()
keras.utils.set_random_seed(1234 + hvd.rank())  # each rank starts from other weights until the broadcast

batch_size, epochs, warmup_epochs, base_lr, momentum = 16, 3, 2, 0.02, 0.9
images, labels = synthetic_mnist(512)
dataset = (tf.data.Dataset.from_tensor_slices((images, labels)).shard(hvd.size(), hvd.rank()).batch(batch_size)
           .repeat())  # as Horovod's example; every epoch a full pass of the shard (steps_per_epoch below)
steps_per_epoch = len(images) // hvd.size() // batch_size


def build_model():
    return keras.Sequential([
        keras.Input((28, 28, 1)),
        keras.layers.Conv2D(4, 3, activation="relu"),
        keras.layers.MaxPooling2D(2),
        keras.layers.Flatten(),
        keras.layers.Dense(10, activation="softmax"),
    ])


model = build_model()
scaled_lr = base_lr * hvd.size()
opt = hvd.DistributedOptimizer(keras.optimizers.SGD(learning_rate=scaled_lr, momentum=momentum))
model.compile(loss=keras.losses.SparseCategoricalCrossentropy(), optimizer=opt, metrics=["accuracy"])
start_weights = hvd.broadcast_object([w.numpy() for w in model.weights], root_rank=0)


class StepRecorder(keras.callbacks.Callback):
    """(weights, momentum buffers, learning rate) before and after each batch."""

    def __init__(self):
        super().__init__()
        self.before, self.after = [], []

    def _state(self):
        optimizer = self.model.optimizer
        buffers = [b.numpy() for b in optimizer.momentums] if optimizer.built else None
        return [w.numpy() for w in self.model.weights], buffers, float(optimizer.learning_rate.numpy())

    def on_train_batch_begin(self, batch, logs=None):
        self.before.append(self._state())

    def on_train_batch_end(self, batch, logs=None):
        self.after.append(self._state())


recorder = StepRecorder()
callbacks = [
    hvd.callbacks.BroadcastGlobalVariablesCallback(0),
    hvd.callbacks.MetricAverageCallback(),
    hvd.callbacks.LearningRateWarmupCallback(initial_lr=scaled_lr, warmup_epochs=warmup_epochs, verbose=1),
    recorder,
]
if hvd.rank() == 0:
    callbacks.append(keras.callbacks.ModelCheckpoint(os.path.join(out_dir, "checkpoint-{epoch}.keras")))
history = model.fit(dataset, steps_per_epoch=steps_per_epoch, callbacks=callbacks, epochs=epochs,
                    verbose=2 if hvd.rank() == 0 else 0)
trained = [w.numpy() for w in model.weights]
everyone_trained = hvd.allgather_object(trained)
for r, theirs in enumerate(everyone_trained):
    for mine, other in zip(trained, theirs):
        check_equal(other, mine, f"rank {r}'s weights after fit equal rank {hvd.rank()}'s")

# ---- every step against Horovod's semantics, from the state it started from -------------------------------------
size = hvd.size()
shards = [list(tf.data.Dataset.from_tensor_slices((images, labels)).shard(size, r).batch(batch_size))
          for r in range(size)]
reference = build_model()
loss_fn = keras.losses.SparseCategoricalCrossentropy()
assert len(recorder.before) == len(recorder.after) == epochs * steps_per_epoch, len(recorder.before)
for got, want in zip(recorder.before[0][0], start_weights):
    check_equal(got, want, "the first step starts from rank 0's weights")
worst = 0.0
lr_before, epoch_losses, learning_rates = scaled_lr, [], []
for epoch in range(epochs):
    losses = []
    for step in range(steps_per_epoch):
        k = epoch * steps_per_epoch + step
        weights, buffers, lr = recorder.before[k]
        expected_lr = scaled_lr / size * ((epoch + (step + 1) / steps_per_epoch) * (size - 1) / warmup_epochs + 1) \
            if epoch < warmup_epochs else lr_before
        check_equal(lr, expected_lr, f"step {k}: the warmup's learning rate", rtol=1e-6)
        if k > 0:  # Horovod's momentum correction: the buffers scaled by new rate / old rate
            for got, last in zip(buffers, recorder.after[k - 1][1]):
                check_equal(got, last * (lr / lr_before), f"step {k}: momentum correction", rtol=1e-5)
        reference.set_weights(weights)
        grads = []
        for r in range(size):
            x, y = shards[r][step]
            with tf.GradientTape() as tape:
                loss = loss_fn(y, reference(x, training=True))
            losses.append(float(loss))
            grads.append([g.numpy().astype(np.float64) for g in tape.gradient(loss, reference.trainable_weights)])
        mean = [np.mean(g, 0) for g in zip(*grads)]
        start = buffers if buffers is not None else [np.zeros_like(w) for w in weights]
        # Keras SGD with momentum: v = momentum v - lr g; w = w + v.
        velocity = [momentum * v.astype(np.float64) - lr * g for v, g in zip(start, mean)]
        expected_weights = [w.astype(np.float64) + v for w, v in zip(weights, velocity)]
        got_weights, got_buffers, _ = recorder.after[k]
        worst = max(worst, check_training_step(got_weights, expected_weights, f"step {k}: weights"),
                    check_training_step(got_buffers, velocity, f"step {k}: momentum buffers"))
        lr_before = lr
    epoch_losses.append(np.mean(losses))
    learning_rates.append(lr_before)
moved = check_moved(trained, start_weights, worst, "Keras fit")
check_equal(history.history["loss"], epoch_losses, "epoch losses averaged across ranks", rtol=1e-5)
check_equal(history.history["lr"], learning_rates, "learning rates of the warmup", rtol=1e-6)

# ---- the checkpoint rank 0 wrote, reloaded on every rank with a distributed optimizer -------------------------
path = os.path.join(out_dir, f"checkpoint-{epochs}.keras")
hvd.barrier()
resumed = hvd.load_model(path)
assert type(resumed.optimizer).__module__.startswith("keras") and hasattr(resumed.optimizer, "register_local_var"), \
    type(resumed.optimizer)
for got, want in zip(resumed.weights, trained):
    check_equal(got, want, "reloaded weights")
for got, want in zip(resumed.optimizer.variables, model.optimizer.variables):
    check_equal(got, want, f"reloaded optimizer variable {want.path}")
if hvd.rank() == 0:
    print(f"Keras fit on {size} ranks: every step equals Horovod's semantics to {worst:.3g} (weights moved "
          f"{moved:.3g}); losses {['%.5f' % v for v in epoch_losses]}", flush=True)
