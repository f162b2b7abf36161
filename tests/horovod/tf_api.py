"""Every call of horovod.tensorflow and horovod.tensorflow.keras (served by
matex) on exact inputs, eagerly and inside tf.function, against references
each rank computes itself for every rank: edge counts, ragged allgathers,
splits, scaling, sparse gradients, the gradient tape, the Keras optimizer's
options, and mismatches between ranks, which must be errors naming what
differed, never hangs. Run under mpirun with MATEX_HOROVOD=1."""
import os

import numpy as np
import tensorflow as tf

import horovod.tensorflow as hvd
import horovod.tensorflow.keras as hvdk
from hvd_test_util import (COUNTS, check_a_rank_leaving, check_equal, check_keras_elastic, check_sync_batch_norm,
                           expect_error, rank_input, reducescatter_rows, rows_input)

assert "matex_horovod" in hvd.__file__, f"imported {hvd.__file__}, not matex's horovod"
import horovod.keras as hvd_keras  # noqa: E402  (the standalone-Keras name serves the same module)
assert hvd_keras.DistributedOptimizer is hvdk.DistributedOptimizer
expect_error(hvd.size, "hvd.init()", kinds=(ValueError,))
hvd.init()
hvdk.init()  # the same job: idempotent
rank, size = hvd.rank(), hvd.size()
assert (hvdk.rank(), hvdk.size()) == (rank, size)
everyone = range(size)
c = lambda a, dtype=tf.float32: tf.constant(np.asarray(a), dtype)  # noqa: E731

# ---- the job's shape -----------------------------------------------------------------------------------
shape = hvd.allgather_object((hvd.local_rank(), hvd.local_size(), hvd.cross_rank(), hvd.cross_size()))
layout = [int(n) for n in (os.environ.get("MATEX_VIRTUAL_NODES") or str(size)).split(",")]
expected_shape = []
for node, count in enumerate(layout):
    for local_rank in range(count):
        holders = [n for n, k in enumerate(layout) if k > local_rank]
        expected_shape.append((local_rank, count, holders.index(node), len(holders)))
assert shape == expected_shape, (shape, expected_shape)
assert hvd.is_homogeneous() == (len(set(layout)) == 1)
assert hvd.mpi_built() and hvd.mpi_threads_supported() and not hvd.gloo_built()
assert (int(hvd.size_op()), int(hvd.rank_op()), int(hvd.local_size_op()), int(hvd.local_rank_op())) == \
    (size, rank, hvd.local_size(), hvd.local_rank())

# ---- allreduce, eager and traced ------------------------------------------------------------------------
traced_sum = tf.function(lambda x: hvd.allreduce(x, op=hvd.Sum, name="traced.sum"))
for count in COUNTS:
    inputs = [rank_input(r, count) for r in everyone]
    total, mean = np.sum(inputs, 0), (np.mean(inputs, 0) if count else np.zeros(0))
    for dtype in (tf.float32, tf.float64, tf.float16, tf.bfloat16):
        rough = 1e-2 if dtype in (tf.float16, tf.bfloat16) else 1e-6
        check_equal(hvd.allreduce(c(inputs[rank], dtype)), mean, f"average {dtype.name} {count}", rtol=rough)
        check_equal(hvd.allreduce(c(inputs[rank], dtype), op=hvd.Sum), total, f"sum {dtype.name} {count}")
    for dtype in (tf.int32, tf.int64, tf.int8, tf.uint8, tf.int16, tf.uint16):
        check_equal(hvd.allreduce(c(inputs[rank], dtype), op=hvd.Sum), total, f"sum {dtype.name} {count}")
    # Integers as Horovod scales them: in float64, truncated toward zero; Average is a postscale of 1/size and
    # a prescale applies to each rank's input before the sum. Negative values too; grouped with floats.
    signed = [rank_input(r, count) - 6 for r in everyone]  # -5..5
    for dtype in (tf.int32, tf.int64, tf.int8, tf.int16):
        check_equal(hvd.allreduce(c(signed[rank], dtype)), np.trunc(np.sum(signed, 0) * (1.0 / size)),
                    f"integer average {dtype.name} count {count}")
        check_equal(hvd.allreduce(c(signed[rank], dtype), op=hvd.Sum, prescale_factor=0.5, postscale_factor=3.0),
                    np.trunc(3.0 * np.sum(np.trunc(0.5 * np.array(signed)), 0)), f"integer scales {dtype.name} {count}")
    both = hvd.grouped_allreduce([c(signed[rank], tf.int32), c(signed[rank], tf.float64)], postscale_factor=0.7)
    check_equal(both[0], np.trunc(np.sum(signed, 0) * (0.7 / size)), f"grouped integer average {count}")
    # (the op's scale factors are float32 attributes, as Horovod's are: 0.7 to 1 part in 2^24)
    check_equal(both[1], np.sum(signed, 0) * (0.7 / size), f"grouped float average {count}", rtol=1e-7)
    check_equal(hvd.allreduce(c(inputs[rank]), op=hvd.Min), np.min(inputs, 0) if count else [], f"min {count}")
    check_equal(hvd.allreduce(c(inputs[rank]), op=hvd.Max), np.max(inputs, 0) if count else [], f"max {count}")
    check_equal(hvd.allreduce(c(inputs[rank], tf.float64), op=hvd.Product), np.prod(inputs, 0), f"prod {count}")
    check_equal(hvd.allreduce(c(inputs[rank]), average=False), total, f"average=False {count}")
    check_equal(hvd.allreduce(c(inputs[rank], tf.float64), prescale_factor=0.5, postscale_factor=3.0),
                mean * 1.5, f"scaled average {count}", rtol=1e-12)
    check_equal(traced_sum(c(inputs[rank])), total, f"allreduce in tf.function {count}")
    group = hvd.grouped_allreduce([c(inputs[rank]), c(inputs[rank] * 2, tf.float64), c(inputs[rank], tf.int32)],
                                  op=hvd.Sum)
    for got, factor in zip(group, (1, 2, 1)):
        check_equal(got, total * factor, f"grouped_allreduce {count}")
    check_equal(hvdk.allreduce(inputs[rank], op=hvd.Sum), total, f"keras allreduce {count}")
out = hvd.allreduce(c(rank_input(rank, 7)), op=hvd.Sum, compression=hvd.Compression.fp16)
assert out.dtype == tf.float32
check_equal(out, np.sum([rank_input(r, 7) for r in everyone], 0), "fp16 compression")
# A sparse gradient (tf.IndexedSlices) is gathered: every rank's rows, values averaged
rows_of = [(r % 3) + 1 for r in everyone]
slices = tf.IndexedSlices(c(rows_input(rank, rows_of[rank], 2)), c(np.arange(rows_of[rank]) + rank, tf.int64),
                          dense_shape=c([size + 3, 2], tf.int64))
sparse = hvd.allreduce(slices)
dense = np.zeros((size + 3, 2))
for r in everyone:
    np.add.at(dense, np.arange(rows_of[r]) + r, rows_input(r, rows_of[r], 2) / size)
check_equal(tf.convert_to_tensor(sparse), dense, "IndexedSlices average", rtol=1e-6)

# ---- the gradients of the other collectives, as Horovod 0.28 defines them --------------------------------------------
upstream = [rows_input(r, 2 * size, 3, salt=5) for r in everyone]  # rank r's gradient of its output
mean_upstream = np.mean(upstream, 0)


def gradient_of(collective, rows, weights):
    x = tf.Variable(c(rows_input(rank, rows, 3), tf.float64))
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(collective(x) * c(weights, tf.float64))
    return tape.gradient(loss, x)


check_equal(gradient_of(hvd.allgather, 2, upstream[rank]), mean_upstream[2 * rank:2 * rank + 2],
            "allgather gradient", rtol=1e-12)
for root in {0, size - 1}:
    check_equal(gradient_of(lambda x: hvd.broadcast(x, root), 2, upstream[rank][:2]),
                mean_upstream[:2] * (rank == root), f"broadcast gradient root {root}", rtol=1e-12)
for op, factor in ((hvd.Sum, size), (hvd.Average, 1)):
    check_equal(gradient_of(lambda x: hvd.reducescatter(x, op=op), 2 * size, upstream[rank][:2]),
                np.concatenate([u[:2] for u in upstream]) * factor, f"reducescatter gradient {op}", rtol=1e-12)
check_equal(gradient_of(hvd.alltoall, 2 * size, upstream[rank]),
            np.concatenate([upstream[j][2 * rank:2 * rank + 2] for j in everyone]), "alltoall gradient")
x_traced = tf.Variable(c(rows_input(rank, 2, 3), tf.float64))


@tf.function
def traced_gather_gradient():
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(hvd.allgather(x_traced, name="traced.gather.grad") * c(upstream[rank], tf.float64))
    return tape.gradient(loss, x_traced)


check_equal(traced_gather_gradient(), mean_upstream[2 * rank:2 * rank + 2], "allgather gradient in tf.function",
            rtol=1e-12)

# ---- allgather, broadcast --------------------------------------------------------------------------------
traced_gather = tf.function(lambda x: hvd.allgather(x, name="traced.gather"),
                            input_signature=[tf.TensorSpec([None, 3], tf.float32)])
for width in (1, 3):
    rows = [(r * 2 + 1) % 4 for r in everyone]
    for rows_of in (rows, [0 if r == size - 1 else n for r, n in enumerate(rows)]):
        mine = rows_input(rank, rows_of[rank], width)
        expected = np.concatenate([rows_input(r, rows_of[r], width) for r in everyone])
        check_equal(hvd.allgather(c(mine)), expected, f"allgather width {width} rows {rows_of}")
        check_equal(hvdk.allgather(mine.astype(np.int64)), expected, f"keras allgather rows {rows_of}")
        if width == 3:
            check_equal(traced_gather(c(mine)), expected, f"allgather in tf.function rows {rows_of}")
out = hvd.grouped_allgather([c([rank]), c(rows_input(rank, 2, 2))])
check_equal(out[1], np.concatenate([rows_input(r, 2, 2) for r in everyone]), "grouped_allgather")
for root in {0, size - 1}:
    for count in COUNTS:
        check_equal(hvd.broadcast(c(rank_input(rank, count)), root), rank_input(root, count),
                    f"broadcast root {root} count {count}")
    check_equal(hvdk.broadcast(rank_input(rank, 5), root), rank_input(root, 5), "keras broadcast")
    variables = [tf.Variable(c(rank_input(rank, 4))), tf.Variable(c(rows_input(rank, 2, 2), tf.float64))]
    hvd.broadcast_variables(variables, root_rank=root)
    check_equal(variables[0], rank_input(root, 4), "broadcast_variables 0")
    check_equal(variables[1], rows_input(root, 2, 2), "broadcast_variables 1")
    variables[0].assign(c(rank_input(rank, 4, salt=3)))  # different on every rank again
    assert hvd.broadcast_(variables, root) == variables
    check_equal(variables[0], rank_input(root, 4, salt=3), "broadcast_")

# ---- alltoall, reducescatter -------------------------------------------------------------------------------
even = c(np.concatenate([rows_input(rank, 2, 3, salt=10 * j) for j in everyone]))
check_equal(hvd.alltoall(even), np.concatenate([rows_input(r, 2, 3, salt=10 * rank) for r in everyone]),
            "alltoall even split")
splits = [(rank + j) % 3 for j in everyone]
mine = c(np.concatenate([rows_input(rank, splits[j], 2, salt=10 * j) for j in everyone]))
received, received_splits = hvd.alltoall(mine, splits=splits)
check_equal(received, np.concatenate([rows_input(r, (r + rank) % 3, 2, salt=10 * rank) for r in everyone]),
            "alltoall with splits")
check_equal(received_splits, [(r + rank) % 3 for r in everyone], "alltoall received splits")
assert received_splits.dtype == tf.int32, received_splits.dtype
if size > 1:
    expect_error(lambda: hvd.alltoall(c(np.zeros((size + 1, 2)))), "multiple of the number of ranks")
expect_error(lambda: hvd.alltoall(mine, splits=[1] * (size + 1)), "splits")
for rows in (size * 3, size * 3 + 1, 1, 0, 7):
    inputs = [rows_input(r, rows, 2) for r in everyone]
    shares = reducescatter_rows(rows, size)
    start = sum(shares[:rank])
    check_equal(hvd.reducescatter(c(inputs[rank]), op=hvd.Sum), np.sum(inputs, 0)[start:start + shares[rank]],
                f"reducescatter sum rows {rows}")
    check_equal(hvdk.reducescatter(inputs[rank], op=hvd.Average),
                (np.mean(inputs, 0) if rows else np.zeros((0, 2)))[start:start + shares[rank]],
                f"keras reducescatter rows {rows}", rtol=1e-6)
out = hvd.grouped_reducescatter([c(rows_input(rank, size, 1)), c(rows_input(rank, size * 2, 1))], op=hvd.Sum)
check_equal(out[1], np.sum([rows_input(r, size * 2, 1) for r in everyone], 0)[2 * rank:2 * rank + 2],
            "grouped_reducescatter")

# ---- objects, barrier, join --------------------------------------------------------------------------------
for root in {0, size - 1}:
    obj = hvd.broadcast_object({"rank": rank, "values": list(range(rank + 3))}, root_rank=root)
    assert obj == {"rank": root, "values": list(range(root + 3))}, obj
assert hvd.allgather_object(("rank", rank, "x" * rank)) == [("rank", r, "x" * r) for r in everyone]
hvd.barrier()
import time  # noqa: E402
time.sleep(2.0 if rank == size - 1 else 0)  # the highest rank arrives last, by far more than ranks wake apart
last = int(hvd.join())
assert last == size - 1, last
# Join as Horovod defines it: a joined rank adds zeros to the others' allreduces until every rank has
# joined (averages still divide by the job's size); their broadcasts fail, naming it.
for first in everyone:
    values = [rank_input(r, 7) - 6 for r in everyone]
    others = np.sum([values[r] for r in everyone if r != first], 0)
    if rank == first:
        last = int(hvd.join())
    else:
        check_equal(hvd.allreduce(tf.constant(values[rank], tf.float32), name="join.average"), others / size,
                    f"join: average without rank {first}", rtol=1e-6)
        check_equal(hvd.allreduce(tf.constant(values[rank], tf.int32), op=hvd.Sum, name="join.int32"), others,
                    f"join: int32 sum without rank {first}")
        if size > 1:
            expect_error(lambda: hvd.broadcast(tf.constant([1.0]), root_rank=(first + 1) % size, name="join.bcast"),
                         f"rank(s) {first} have joined")
        last = int(hvd.join())
    lasts = hvd.allgather_object(last)
    assert len(set(lasts)) == 1 and (size == 1 or lasts[0] != first), (first, lasts)

# ---- DistributedGradientTape: gradients averaged across ranks, eager and traced ------------------------------
data = [(rows_input(r, 4, 3) / 100.0, rows_input(r, 4, 2) / 50.0) for r in everyone]
w0 = rows_input(0, 3, 2) / 10.0


def local_gradient(w, r):
    """d/dw of mean((x w - y)^2), in float64: the reference for rank r."""
    x, y = data[r]
    return 2.0 * x.T @ (x @ w - y) / y.size


expected = np.mean([local_gradient(w0, r) for r in everyone], 0)
w = tf.Variable(c(w0, tf.float64))


def tape_step(op=hvd.Average, predivide=1.0):
    with tf.GradientTape() as tape:
        x, y = (c(a, tf.float64) for a in data[rank])
        loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - y))
    tape = hvd.DistributedGradientTape(tape, op=op, gradient_predivide_factor=predivide)
    return tape.gradient(loss, [w])[0]


check_equal(tape_step(), expected, "DistributedGradientTape", rtol=1e-12)
check_equal(tape_step(predivide=2.0), expected, "DistributedGradientTape predivide", rtol=1e-12)
check_equal(tape_step(op=hvd.Sum), expected * size, "DistributedGradientTape Sum", rtol=1e-12)
check_equal(tf.function(tape_step)(), expected, "DistributedGradientTape in tf.function", rtol=1e-12)
expect_error(lambda: hvd.DistributedGradientTape(tf.GradientTape(), op=hvd.Adasum), "Adasum")
# PartialDistributedGradientTape: a local layer's gradient stays this rank's, divided by the number of ranks
local = tf.keras.layers.Dense(2, use_bias=False, dtype="float64")
local.build((None, 3))
local.kernel.assign(w0)
with tf.GradientTape() as tape:
    x, y = (c(a, tf.float64) for a in data[rank])
    loss = tf.reduce_mean(tf.square(local(x) - y))
tape = hvd.PartialDistributedGradientTape(tape, local_layers=local)
check_equal(tape.gradient(loss, local.trainable_weights)[0], local_gradient(w0, rank) / size,
            "PartialDistributedGradientTape local layer", rtol=1e-12)
# get_local_and_global_gradients: (variable, gradient) pairs, the local layer's apart from the averaged ones
with tf.GradientTape() as tape:
    loss = tf.reduce_mean(tf.square(local(x) - y)) + tf.reduce_sum(w * w)
tape = hvd.PartialDistributedGradientTape(tape, local_layers=[local])
local_pairs, shared_pairs = tape.get_local_and_global_gradients(loss, [local.kernel, w])
assert [v for v, _ in local_pairs] == [local.kernel] and [v for v, _ in shared_pairs] == [w], (local_pairs, shared_pairs)
check_equal(local_pairs[0][1], local_gradient(w0, rank) / size, "get_local_and_global_gradients local", 1e-12)
check_equal(shared_pairs[0][1], 2.0 * w.numpy(), "get_local_and_global_gradients shared", 1e-12)
check_sync_batch_norm(hvd, rank, size)  # Keras 3's layer here; tf_keras_api.py checks tf_keras's

# ---- the Keras DistributedOptimizer: apply() averages first; backward_passes_per_step -----------------------------
for options, factor in (({}, 1.0), ({"op": hvd.Sum}, size), ({"gradient_predivide_factor": 2.0}, 1.0)):
    v = tf.Variable(c(w0, tf.float64))
    opt = hvdk.DistributedOptimizer(tf.keras.optimizers.SGD(learning_rate=1.0), **options)
    assert isinstance(opt, tf.keras.optimizers.SGD)
    opt.apply([c(local_gradient(w0, rank), tf.float64)], [v])
    check_equal(v, w0 - factor * expected, f"Keras DistributedOptimizer {options}", rtol=1e-12)
for average_aggregated, factor in ((False, 2.0), (True, 1.0)):
    v = tf.Variable(c(w0, tf.float64))
    opt = hvdk.DistributedOptimizer(tf.keras.optimizers.SGD(learning_rate=1.0), backward_passes_per_step=2,
                                    average_aggregated_gradients=average_aggregated)
    opt.apply([c(local_gradient(w0, rank), tf.float64)], [v])
    check_equal(v, w0, "backward_passes_per_step: nothing applied after one pass")
    opt.apply([c(local_gradient(w0, rank) * 3, tf.float64)], [v])
    check_equal(v, w0 - factor * 2 * expected, f"backward_passes_per_step=2 average={average_aggregated}",
                rtol=1e-12)
# Mixed precision: a loss-scale optimizer around the distributed one skips a step on every rank when any
# rank's gradients overflow (rank 0's here), then applies the unscaled mean
v = tf.Variable(c(w0, tf.float64))
lso = tf.keras.optimizers.LossScaleOptimizer(hvdk.DistributedOptimizer(tf.keras.optimizers.SGD(learning_rate=1.0)),
                                             initial_scale=4.0)
overflow = np.full_like(w0, np.inf) if rank == 0 else local_gradient(w0, rank)
lso.apply([c(overflow * 4.0, tf.float64)], [v])
check_equal(v, w0, "loss-scale optimizer: a step overflowing on one rank is skipped on all")
check_equal(lso.dynamic_scale, 2.0, "loss-scale optimizer: every rank halves its scale")
lso.apply([c(local_gradient(w0, rank) * 2.0, tf.float64)], [v])
check_equal(v, w0 - expected, "loss-scale optimizer: the unscaled mean", rtol=1e-12)
# The warmup's momentum correction leaves Adam's first moments alone (Horovod corrects momentum optimizers only)
model = tf.keras.Sequential([tf.keras.Input((3,)), tf.keras.layers.Dense(2)])
model.compile(optimizer=hvdk.DistributedOptimizer(tf.keras.optimizers.Adam(0.01)), loss="mse")
model.fit(c(data[rank][0]), c(data[rank][1]), epochs=1, verbose=0)
moments = [m.numpy() for m in model.optimizer._momentums]
warmup = hvdk.callbacks.LearningRateWarmupCallback(initial_lr=0.01, warmup_epochs=2, steps_per_epoch=4)
warmup.set_model(model)
warmup.on_epoch_begin(0)
warmup.on_batch_begin(0)
check_equal(model.optimizer.learning_rate, 0.01 / size * (0.25 * (size - 1) / 2 + 1), "warmup rate", rtol=1e-6)
for got, before in zip(model.optimizer._momentums, moments):
    check_equal(got, before, "Adam's first moments after a rate change")
expect_error(lambda: hvdk.DistributedOptimizer(tf.keras.optimizers.SGD(), backward_passes_per_step=0), ">= 1",
             kinds=(ValueError,))
expect_error(lambda: hvdk.DistributedOptimizer(tf.keras.optimizers.SGD(), op=hvd.Min), "Average or Sum",
             kinds=(ValueError,))

# ---- TF1 graphs: BroadcastGlobalVariablesHook in a MonitoredTrainingSession, the TF1 DistributedOptimizer ------
with tf.Graph().as_default():
    v1 = tf.compat.v1.get_variable("v1", initializer=tf.constant(rank_input(rank, 3), tf.float64))
    step = tf.compat.v1.train.get_or_create_global_step()
    slope = tf.constant(rank_input(rank, 3, salt=1), tf.float64)
    opt1 = hvd.DistributedOptimizer(tf.compat.v1.train.GradientDescentOptimizer(0.5))
    train_op = opt1.minimize(tf.reduce_sum(v1 * slope), global_step=step)
    with tf.compat.v1.train.MonitoredTrainingSession(hooks=[hvd.BroadcastGlobalVariablesHook(0)]) as session:
        check_equal(session.run(v1), rank_input(0, 3), "BroadcastGlobalVariablesHook")
        session.run(train_op)
        check_equal(session.run(v1), rank_input(0, 3) - 0.5 * np.mean([rank_input(r, 3, salt=1) for r in everyone], 0),
                    "TF1 DistributedOptimizer", rtol=1e-12)

# In a plain TF1 graph what a call returns must carry its collective: broadcast_ in place (root's values
# each time the returned tensors are evaluated), the broadcast gradient (zeros off the root, yet every rank
# takes part in its allreduce, or the root would wait), and alltoall's argument checks (InvalidArgumentError).
with tf.Graph().as_default(), tf.compat.v1.Session() as session:
    root = size - 1
    in_place = [tf.compat.v1.get_variable(f"in_place_{n}", initializer=tf.constant(rank_input(rank, n), tf.float64))
                for n in (1, 4)]
    session.run(tf.compat.v1.global_variables_initializer())
    results = hvd.broadcast_(in_place, root)
    for n, result, variable in zip((1, 4), results, in_place):
        check_equal(session.run(result), rank_input(root, n), f"TF1 broadcast_ of {n}")
        check_equal(session.run(variable), rank_input(root, n), f"TF1 broadcast_ of {n}: the variable")
    x1 = tf.constant(rank_input(rank, 5), tf.float64)
    (gradient,) = tf.compat.v1.gradients(hvd.broadcast(x1, root), [x1], tf.ones([5], tf.float64))
    check_equal(session.run(gradient), np.ones(5) if rank == root else np.zeros(5), "TF1 broadcast gradient")
    for bad, what in ((lambda: hvd.alltoall(tf.ones([size + 1])), "dimension 0 must be a multiple"),
                      (lambda: hvd.alltoall(tf.ones([size]), splits=tf.constant([size + 1] + [0] * (size - 1))),
                       "splits must sum")):
        expect_error(lambda: session.run(bad()), what, kinds=(tf.errors.InvalidArgumentError,))
# ---- elastic state on a job of fixed size: sync gives rank 0's, restore goes back to the last commit ----------
v = tf.Variable(c(rank_input(rank, 4), tf.float64))
state = hvd.elastic.TensorFlowState([v], batch=20 + rank, epoch=10 + rank)
state.sync()
check_equal(v, rank_input(0, 4), "TensorFlowState.sync: rank 0's variables")
assert (state.batch, state.epoch) == (20, 10), (state.batch, state.epoch)
v.assign(c(rank_input(rank, 4, salt=3), tf.float64))
state.batch = 99
state.restore()
check_equal(v, rank_input(0, 4), "TensorFlowState.restore: the synced values")
assert state.batch == 20
v.assign(c(rank_input(rank, 4, salt=5), tf.float64))
state.batch = 30 + rank
state.commit()
v.assign(c(np.zeros(4), tf.float64))
state.restore()
check_equal(v, rank_input(rank, 4, salt=5), "TensorFlowState.restore: the committed values")
assert state.batch == 30 + rank
expect_error(lambda: hvd.elastic.TensorFlowState(), "variables", kinds=(ValueError,))
check_keras_elastic(hvdk, tf.keras, rank)
check_keras_elastic(hvd_keras, tf.keras, rank)  # horovod.keras: the keras package, Keras 3 here too

# ---- refusals and bad arguments -------------------------------------------------------------------------------
expect_error(lambda: hvd.allreduce(c([1.0]), op=hvd.Adasum), "Adasum", "not supported")
expect_error(lambda: hvd.allreduce(c([1.0]), op=hvd.Sum, average=True), "not both", kinds=(ValueError,))
expect_error(lambda: hvd.broadcast(c([1.0]), root_rank=size), f"root_rank {size}", kinds=(tf.errors.InvalidArgumentError,))
expect_error(lambda: hvd.broadcast(c([1.0]), root_rank="0"), "root_rank='0'", kinds=(ValueError,))
expect_error(lambda: hvd.allgather(c(1.0)), "scalar", kinds=(tf.errors.InvalidArgumentError,))
# What one rank alone cannot serve fails on every rank, naming that rank, not a wait for it
last = size - 1
expect_error(lambda: hvd.broadcast(c([1.0]), root_rank=-1 if rank == last else 0, name="tf.refused.root"),
             "tf.refused.root", f"rank {last}", "root_rank -1", kinds=(tf.errors.InvalidArgumentError,))
expect_error(lambda: hvd.allgather(c(1.0) if rank == last else c([1.0]), name="tf.refused.scalar"),
             "tf.refused.scalar", f"rank {last}", "scalar", kinds=(tf.errors.InvalidArgumentError,))
expect_error(lambda: hvd.allreduce(c([1.0]), process_set=hvd.ProcessSet([0])), "is not registered", kinds=(ValueError,))
expect_error(lambda: tf.function(hvd.barrier)(), "barrier", "eagerly")
expect_error(lambda: hvd.broadcast_global_variables(0), "eager", kinds=(RuntimeError,))
expect_error(lambda: hvd.broadcast_object_fn(), "broadcast_object_fn")
check_equal(hvd.broadcast(c(rank_input(rank, 3)), np.int64(size - 1)), rank_input(size - 1, 3), "NumPy root_rank")
expect_error(lambda: hvd.start_timeline("x.json"), "HOROVOD_TIMELINE")

# ---- mismatches between ranks: errors naming them, on every rank, not hangs -------------------------------------
if size > 1:
    expect_error(lambda: hvd.allreduce(c(rank_input(rank, 3 + rank)), name="tf.mismatch.count"),
                 "tf.mismatch.count", "count=3", "count=4")
    expect_error(lambda: hvd.allreduce(c([1.0], tf.float32 if rank else tf.float64), name="tf.mismatch.dtype"),
                 "tf.mismatch.dtype", "float32", "float64")
    expect_error(lambda: hvd.broadcast(c([1.0]), root_rank=rank, name="tf.mismatch.root"), "tf.mismatch.root",
                 "root=")
# Last: one rank leaves while the others still submit (it shuts Horovod down on every rank).
check_a_rank_leaving(hvd, c)
print(f"rank {rank}: horovod.tensorflow API checks passed on {size} ranks", flush=True)
