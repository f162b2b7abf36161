"""horovod.tensorflow.keras and horovod.keras on tf_keras (Keras 2, as
TF_USE_LEGACY_KERAS=1 makes tf.keras): what Horovod's users of TensorFlow
2.16+ run. Every check has a reference computed without Horovod:

- fit with hvd.DistributedOptimizer(tf.optimizers.SGD(...)) and with a
  legacy optimizer, each rank on its share of every global batch, against
  the plain single-process fit on the whole global batch (float64, so the
  only difference is rounding); the broadcast callback's start, the
  metric-average callback's figures (the mean of what each rank logged), and
  the warmup callback's rates;
- backward_passes_per_step (summed or averaged passes) and local variables,
  eagerly and in tf.function, against the arithmetic of exact gradients;
- PartialDistributedOptimizer against gradients each rank computes itself
  for every rank;
- hvd.load_model: the optimizer comes back distributed with its state, and
  the next step equals the plain loaded model's;
- the Keras-level collectives return tensors; bad arguments raise.
Usage: tf_keras_api.py OUTPUT_FOLDER (under mpirun, MATEX_HOROVOD=1,
TF_USE_LEGACY_KERAS=1)."""
import os
import sys

import numpy as np
import tensorflow as tf

import horovod.keras as hvd_keras
import horovod.tensorflow.keras as hvd
from hvd_test_util import (check_equal, check_keras_elastic, check_moved, check_sync_batch_norm, check_training_step,
                           expect_error)

assert os.environ.get("TF_USE_LEGACY_KERAS") == "1", "run under TF_USE_LEGACY_KERAS=1"
keras = tf.keras
assert keras.Model.__module__.startswith("tf_keras"), keras.Model.__module__
out_dir = sys.argv[1]
hvd.init()
rank, size = hvd.rank(), hvd.size()
keras.backend.set_floatx("float64")
PER_RANK, STEPS, EPOCHS = 3, 4, 2
GLOBAL = PER_RANK * size


def build(seed):
    keras.utils.set_random_seed(seed)
    return keras.Sequential([keras.Input((6,)), keras.layers.Dense(5, activation="tanh"), keras.layers.Dense(3)])


state = np.random.RandomState(7)
x = state.rand(STEPS * GLOBAL, 6)
y = state.rand(STEPS * GLOBAL, 3)


def my_share(a):
    """This rank's rows of every global batch (rows r*PER_RANK.. of each)."""
    return a.reshape(STEPS, size, PER_RANK, -1)[:, rank].reshape(STEPS * PER_RANK, -1)


class RawLogs(keras.callbacks.Callback):
    """The epoch figures this rank computed, before MetricAverageCallback averages them."""

    def __init__(self):
        super().__init__()
        self.losses = []

    def on_epoch_end(self, epoch, logs=None):
        self.losses.append(float(logs["loss"]))


# ---- fit: each rank its share, against the plain fit on the whole global batch ------------------------------
optimizers = {
    "tf.optimizers.SGD with momentum": lambda: tf.optimizers.SGD(learning_rate=0.1, momentum=0.9),
    "tf.keras.optimizers.legacy.Adam": lambda: tf.keras.optimizers.legacy.Adam(learning_rate=0.01),
    "tf.keras.optimizers.RMSprop": lambda: tf.keras.optimizers.RMSprop(learning_rate=0.01),
}
for what, make in optimizers.items():
    model = build(100 + rank)  # every rank starts elsewhere until the broadcast callback
    model.compile(optimizer=hvd.DistributedOptimizer(make()), loss="mse")
    raw = RawLogs()
    history = model.fit(my_share(x), my_share(y), batch_size=PER_RANK, epochs=EPOCHS, shuffle=False, verbose=0,
                        callbacks=[hvd.callbacks.BroadcastGlobalVariablesCallback(0), raw,
                                   hvd.callbacks.MetricAverageCallback()])
    plain = build(100)  # rank 0's start
    start = [w.copy() for w in plain.get_weights()]
    plain.compile(optimizer=make(), loss="mse")
    plain.fit(x, y, batch_size=GLOBAL, epochs=EPOCHS, shuffle=False, verbose=0)
    worst = check_training_step(model.get_weights(), plain.get_weights(), f"fit with {what}", rtol=1e-12)
    check_moved(model.get_weights(), start, worst, f"fit with {what}")
    assert int(model.optimizer.iterations.numpy()) == STEPS * EPOCHS
    everyone = hvd.allgather_object(raw.losses)
    # tf_keras keeps its loss metric in float32, and the history holds the average rounded to it
    check_equal(history.history["loss"], np.mean(everyone, axis=0), f"averaged losses, {what}", rtol=2e-7)
    assert type(model.optimizer).__name__ == type(make()).__name__

# The warmup callback on tf_keras: the rate climbs from lr/size to lr over the warmup, Horovod's formula.
rates = []


class Rates(keras.callbacks.Callback):
    def on_train_batch_begin(self, batch, logs=None):
        rates.append(float(self.model.optimizer.lr.numpy()))


model = build(5)
model.compile(optimizer=hvd.DistributedOptimizer(tf.optimizers.SGD(0.4, momentum=0.5)), loss="mse")
model.fit(my_share(x), my_share(y), batch_size=PER_RANK, epochs=2, shuffle=False, verbose=0,
          callbacks=[hvd.callbacks.LearningRateWarmupCallback(initial_lr=0.4, warmup_epochs=1), Rates()])
expected = [0.4 / size * ((b + 1.0) / STEPS * (size - 1) + 1) for b in range(STEPS)] + [0.4] * STEPS
check_equal(rates, expected, "warmup rates", rtol=1e-6)

# ---- backward_passes_per_step and local variables --------------------------------------------------------
PASSES, TOTAL = 3, 8


def grad_w(r, p):  # rank r's gradient of w in pass p: small integers
    return np.array([r + p + 1.0, 2.0 * r - p, 3.0])


def grad_v(r, p):
    return np.array([p - r * 1.0, 1.0 + r])


for average, traced in ((False, False), (True, True)):
    w = tf.Variable(np.zeros(3))
    v = tf.Variable(np.zeros(2))  # local: its gradient stays on the rank
    opt = hvd.DistributedOptimizer(tf.optimizers.SGD(0.5), backward_passes_per_step=PASSES,
                                   average_aggregated_gradients=average)
    opt.register_local_var(v)

    def one_pass(a, b):
        opt.minimize(lambda: tf.reduce_sum(w * a) + tf.reduce_sum(v * b), [w, v])

    step = tf.function(one_pass) if traced else one_pass
    expect_w, expect_v = np.zeros(3), np.zeros(2)
    sum_w, sum_v = np.zeros(3), np.zeros(2)
    for p in range(TOTAL):
        step(tf.constant(grad_w(rank, p)), tf.constant(grad_v(rank, p)))
        sum_w += np.mean([grad_w(r, p) for r in range(size)], axis=0)
        sum_v += grad_v(rank, p) / size
        if (p + 1) % PASSES == 0:
            scale = 1.0 / PASSES if average else 1.0
            expect_w -= 0.5 * scale * sum_w
            expect_v -= 0.5 * scale * sum_v
            sum_w, sum_v = np.zeros(3), np.zeros(2)
        label = f"pass {p} (average={average}, traced={traced})"
        check_equal(w, expect_w, f"shared variable after {label}", rtol=1e-12)
        check_equal(v, expect_v, f"local variable after {label}", rtol=1e-12)
        assert int(opt.iterations.numpy()) == p + 1, (label, int(opt.iterations.numpy()))

# ---- PartialDistributedOptimizer (horovod.keras) -----------------------------------------------------------
model = build(11)  # the same weights everywhere
inputs = [state_r.rand(2, 6) for state_r in (np.random.RandomState(50 + r) for r in range(size))]
targets = [np.full((2, 3), float(r)) for r in range(size)]


def tape_gradients(r):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(model(inputs[r]) - targets[r]))
    return tape, loss, [g.numpy() for g in tape.gradient(loss, model.trainable_weights)]


per_rank = [tape_gradients(r)[2] for r in range(size)]
opt = hvd_keras.PartialDistributedOptimizer(tf.optimizers.Adam(), local_layers=[model.layers[0]])
with tf.GradientTape() as tape:
    loss = tf.reduce_mean(tf.square(model(inputs[rank]) - targets[rank]))
pairs = opt.compute_gradients(loss, model.trainable_weights, tape=tape)
local = {id(w) for w in model.layers[0].trainable_weights}
for i, (g, var) in enumerate(pairs):
    want = per_rank[rank][i] / size if id(var) in local else np.mean([p[i] for p in per_rank], axis=0)
    check_equal(g, want, f"partial optimizer gradient of {var.name}", rtol=1e-12)

# ---- hvd.load_model: distributed again, state kept, and the next step as the plain loaded model's --------------
model = build(21)
model.compile(optimizer=hvd.DistributedOptimizer(tf.optimizers.Adam(0.01)), loss="mse")
model.fit(my_share(x), my_share(y), batch_size=PER_RANK, epochs=1, shuffle=False, verbose=0)
for suffix in ("h5", "keras"):
    path = os.path.join(out_dir, f"model.{suffix}")
    if rank == 0:
        model.save(path)
    hvd.barrier()
    resumed = hvd.load_model(path)
    assert hasattr(resumed.optimizer, "register_local_var"), type(resumed.optimizer)
    assert type(resumed.optimizer).__name__ == "Adam"
    assert int(resumed.optimizer.iterations.numpy()) == STEPS, int(resumed.optimizer.iterations.numpy())
    plain = keras.models.load_model(path)
    assert not hasattr(plain.optimizer, "register_local_var")
    resumed.fit(my_share(x)[:PER_RANK], my_share(y)[:PER_RANK], batch_size=PER_RANK, verbose=0, shuffle=False)
    plain.fit(x[:GLOBAL], y[:GLOBAL], batch_size=GLOBAL, verbose=0, shuffle=False)
    check_training_step(resumed.get_weights(), plain.get_weights(), f"the step after load_model ({suffix})",
                        rtol=1e-12)
    hvd.barrier()

# ---- hvd.elastic on tf_keras (a job of fixed size) ------------------------------------------------------------
check_keras_elastic(hvd, keras, rank)
# ---- horovod.tensorflow's SyncBatchNormalization, made on tf_keras's BatchNormalization -------------------------
import horovod.tensorflow as hvd_tf  # noqa: E402
check_sync_batch_norm(hvd_tf, rank, size)
# ---- the Keras-level collectives give tensors, as Horovod's do eagerly ------------------------------------------
total = hvd.allreduce(tf.constant([rank + 1.0, 2.0]), op=hvd.Sum)
assert tf.is_tensor(total)
check_equal(total.numpy(), [size * (size + 1) / 2, 2.0 * size], "keras allreduce")
check_equal(hvd.allgather(np.array([[rank]])), np.arange(size).reshape(size, 1), "keras allgather")
check_equal(hvd.broadcast(np.array([rank, 1]), root_rank=size - 1), [size - 1, 1], "keras broadcast")

# ---- bad arguments -----------------------------------------------------------------------------------------
expect_error(lambda: hvd.DistributedOptimizer(object()), "tf_keras", "object", kinds=(TypeError,))
expect_error(lambda: hvd.DistributedOptimizer(tf.optimizers.SGD(0.1), backward_passes_per_step=0),
             "backward_passes_per_step", kinds=(ValueError,))
distributed = hvd.DistributedOptimizer(tf.optimizers.SGD(0.1))
expect_error(lambda: hvd.DistributedOptimizer(distributed), "distributed already", kinds=(ValueError,))
copy = type(distributed).from_config(distributed.get_config())
assert copy.get_config() == distributed.get_config() and hasattr(copy, "register_local_var")
print(f"rank {rank}: tf_keras Horovod API checks passed")
