"""A TensorFlow 2 MNIST script in the shape of Horovod's published
tensorflow2_mnist.py: a tf.function training step whose tape is wrapped in
hvd.DistributedGradientTape, Adam at a rate scaled by the number of ranks,
the model's and optimizer's variables broadcast from rank 0 after the first
step (as the example does: each rank's first gradient is taken at its own
initial weights), progress printed by rank 0 and a checkpoint that rank 0
saves.

Every rank then checks each step against Horovod's semantics, computed in
one process with plain Keras Adam from the state (weights and Adam's
variables) the step started from: the first step applies the mean of every
rank's gradient at that rank's own initial weights to rank 0's weights;
every later step applies the mean (float64) of the ranks' gradients on their
shards. Step by step, so that rounding is not amplified into the comparison
(keras_mnist.py says why). It also checks the printed losses and the saved
checkpoint. Usage: tf_mnist_tape.py OUTPUT_FOLDER"""
import os
import sys

import keras
import numpy as np
import tensorflow as tf

import horovod.tensorflow as hvd
from hvd_test_util import check_equal, check_moved, check_training_step, synthetic_mnist

out_dir = sys.argv[1]
hvd.init()
keras.utils.set_random_seed(99 + hvd.rank())

images, labels = synthetic_mnist(512, seed=1)
batch_size, steps = 16, 24 // hvd.size()
dataset = (tf.data.Dataset.from_tensor_slices((images, labels)).shard(hvd.size(), hvd.rank()).repeat()
           .batch(batch_size))


def build_model():
    return keras.Sequential([
        keras.Input((28, 28, 1)),
        keras.layers.Conv2D(4, 3, activation="relu"),
        keras.layers.Flatten(),
        keras.layers.Dense(16, activation="relu"),
        keras.layers.Dense(10),
    ])


mnist_model = build_model()
initial_weights = hvd.allgather_object([w.numpy() for w in mnist_model.weights])
loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
opt = keras.optimizers.Adam(0.001 * hvd.size())
checkpoint = tf.train.Checkpoint(model=mnist_model, optimizer=opt)


@tf.function
def training_step(images, labels, first_batch):
    with tf.GradientTape() as tape:
        probs = mnist_model(images, training=True)
        loss_value = loss(labels, probs)
    tape = hvd.DistributedGradientTape(tape)
    grads = tape.gradient(loss_value, mnist_model.trainable_variables)
    opt.apply_gradients(zip(grads, mnist_model.trainable_variables))
    # Horovod's example broadcasts after the first step, so that the optimizer's variables exist.
    if first_batch:
        hvd.broadcast_variables(mnist_model.variables, root_rank=0)
        hvd.broadcast_variables(opt.variables, root_rank=0)
    return loss_value


printed, states = [], []  # states: (weights, Adam's variables) after each step
for batch, (x, y) in enumerate(dataset.take(steps)):
    loss_value = training_step(x, y, batch == 0)
    printed.append(float(loss_value))
    states.append(([w.numpy() for w in mnist_model.weights], [v.numpy() for v in opt.variables]))
    if batch % 4 == 0 and hvd.local_rank() == 0:
        print(f"Step #{batch}\tLoss: {loss_value:.6f}", flush=True)
if hvd.rank() == 0:
    checkpoint.save(os.path.join(out_dir, "ckpt"))
everyone_losses = hvd.allgather_object(printed)

# ---- every step against Horovod's semantics, from the state it started from ---------------------------------------
size = hvd.size()
shards = [list(tf.data.Dataset.from_tensor_slices((images, labels)).shard(size, r).repeat().batch(batch_size)
               .take(steps)) for r in range(size)]
models = [build_model() for _ in range(size)]
for m, w in zip(models, initial_weights):
    m.set_weights(w)
reference, ref_opt = models[0], keras.optimizers.Adam(0.001 * size)
ref_opt.build(reference.trainable_variables)
assert len(ref_opt.variables) == len(states[0][1]), (len(ref_opt.variables), len(states[0][1]))
reference_losses = [[] for _ in range(size)]
worst = 0.0
for step in range(steps):
    if step > 0:  # start from the state the distributed run reached
        reference.set_weights(states[step - 1][0])
        for variable, value in zip(ref_opt.variables, states[step - 1][1]):
            variable.assign(value)
    grads = []
    for r in range(size):
        m = models[r] if step == 0 else reference  # step 0: every rank at its own initial weights
        x, y = shards[r][step]
        with tf.GradientTape() as tape:
            value = loss(y, m(x, training=True))
        reference_losses[r].append(float(value))
        grads.append([g.numpy().astype(np.float64) for g in tape.gradient(value, m.trainable_variables)])
    mean = [tf.constant(np.mean(g, 0).astype(np.float32)) for g in zip(*grads)]
    ref_opt.apply(mean, reference.trainable_variables)
    worst = max(worst, check_training_step(states[step][0], [w.numpy() for w in reference.weights],
                                           f"step {step}: weights"),
                check_training_step(states[step][1], [v.numpy() for v in ref_opt.variables],
                                    f"step {step}: Adam's variables"))
trained = states[-1][0]
moved = check_moved(trained, initial_weights[0], worst, "GradientTape loop")
for r in range(size):
    check_equal(everyone_losses[r], reference_losses[r], f"rank {r}'s losses", rtol=1e-5)

# ---- the checkpoint rank 0 saved restores the trained weights -----------------------------------------------------
hvd.barrier()
restored = build_model()
restored_opt = keras.optimizers.Adam(0.001 * size)
status = tf.train.Checkpoint(model=restored, optimizer=restored_opt).restore(os.path.join(out_dir, "ckpt-1"))
status.expect_partial()
for got, want in zip(restored.weights, trained):
    check_equal(got, want, "restored checkpoint")
if hvd.rank() == 0:
    print(f"GradientTape loop on {size} ranks: every step equals Horovod's semantics to {worst:.3g} (weights "
          f"moved {moved:.3g})", flush=True)
