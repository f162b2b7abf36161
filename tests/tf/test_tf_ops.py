"""The TensorFlow ops under mpirun: every result checked against NumPy.

Each rank builds every rank's inputs from (rank, tensor, element), so it can
compute the expected result itself. Inputs are small integers: every sum is
exact in every dtype. Covers allreduce (every op, every dtype, edge counts,
groups of mixed dtypes, scale factors, tf.function, the gradient), broadcast
(every root, bool, empty), allgather (rows that differ per rank, none, zero
width), the same inside XLA-compiled functions, a shape mismatch that must fail on every rank without a hang, and the
error before matex.init().

Run: PYTHONPATH=<build>/python mpirun -np N python3 test_tf_ops.py
"""
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

import matex  # noqa: E402

FAILURES = []


def check(condition, what):
    if not condition:
        FAILURES.append(what)
        print(f"rank {RANK}: FAIL {what}", flush=True)


def inputs(rank, tensor, count, dtype):
    values = (np.arange(count) * 7 + rank * 3 + tensor) % 5 - 2  # -2..2
    if np.dtype(dtype).kind == "u":
        values = values + 2
    return values.astype(dtype)


# Before init: a clear error, not a crash or a hang.
RANK = -1
try:
    matex.allreduce(tf.constant([1.0]))
    check(False, "allreduce before init raised nothing")
except tf.errors.FailedPreconditionError as error:
    check("not initialized" in str(error), f"error before init names the cause: {error}")

matex.init()
RANK, SIZE = matex.rank(), matex.size()

COUNTS = [0, 1, 7, 1023, 65537]
DTYPES = [np.float32, np.float64, np.int32, np.int64, np.int8, np.uint8, np.int16, np.uint16, np.float16, tf.bfloat16.as_numpy_dtype]
REDUCTIONS = {
    "sum": lambda a: np.sum(a, axis=0),
    "average": lambda a: np.sum(a, axis=0) / SIZE,
    "min": lambda a: np.min(a, axis=0),
    "max": lambda a: np.max(a, axis=0),
    "product": lambda a: np.prod(a, axis=0),
}

tensor_id = 0
for dtype in DTYPES:
    floating = np.dtype(dtype).kind == "f" or dtype is tf.bfloat16.as_numpy_dtype
    for op, reference in REDUCTIONS.items():
        if op == "average" and not floating:
            continue
        if op == "product" and SIZE > 2 and np.dtype(dtype).itemsize == 1:
            continue  # 2^4 overflows int8
        for count in COUNTS:
            tensor_id += 1
            # An average's inputs are multiples of SIZE, so that the exact mean is representable in every dtype.
            scale = SIZE if op == "average" else 1
            mine = inputs(RANK, tensor_id, count, dtype) * dtype(scale)
            everyone = np.stack([(inputs(r, tensor_id, count, dtype) * dtype(scale)).astype(np.float64)
                                 for r in range(SIZE)])
            want = reference(everyone) if count else np.zeros(0)
            got = matex.allreduce(tf.constant(mine), op=op).numpy().astype(np.float64)
            check(got.shape == (count,) and np.array_equal(got, want.astype(np.float64)),
                  f"allreduce {op} {np.dtype(dtype).name} count {count}")

# A group of mixed dtypes and sizes, with scale factors.
group = [inputs(RANK, 1000 + i, n, d) for i, (n, d) in
         enumerate([(5, np.float32), (300007, np.float32), (3, np.int32), (0, np.float64), (4099, np.float64)])]
reduced = matex.allreduce([tf.constant(g) for g in group], op="sum")
for i, (g, out) in enumerate(zip(group, reduced)):
    want = sum(inputs(r, 1000 + i, g.size, g.dtype).astype(np.float64) for r in range(SIZE))
    check(out.dtype == g.dtype and np.array_equal(out.numpy().astype(np.float64), want), f"group member {i}")
even = tf.constant(2.0 * inputs(RANK, 2000, 64, np.float32))
scaled = matex.allreduce(even, op="sum", prescale=0.5, postscale=4.0).numpy()
want = 4.0 * sum(inputs(r, 2000, 64, np.float32) for r in range(SIZE))
check(np.array_equal(scaled, want), "prescale 0.5 and postscale 4")


# Inside a tf.function, called several times (the engine's cache serves repeats).
@tf.function
def step(x):
    return matex.allreduce(x * 2.0, op="sum")


for k in range(3):
    x = tf.constant(inputs(RANK, 3000 + k, 33, np.float32))
    want = 2.0 * sum(inputs(r, 3000 + k, 33, np.float32) for r in range(SIZE))
    check(np.array_equal(step(x).numpy(), want), f"tf.function call {k}")

# The gradient: d/dx of sum(c_me * allreduce_sum(x)) on each rank is the sum of every rank's c.
x = tf.Variable(inputs(RANK, 4000, 10, np.float32))
c = tf.constant(inputs(RANK, 4001, 10, np.float32))
with tf.GradientTape() as tape:
    loss = tf.reduce_sum(c * matex.allreduce(x, op="sum"))
grad = tape.gradient(loss, x).numpy()
check(np.array_equal(grad, sum(inputs(r, 4001, 10, np.float32) for r in range(SIZE))), "allreduce gradient")
with tf.GradientTape() as tape:
    loss = tf.reduce_sum(c * matex.allreduce(x, op="average"))
grad = tape.gradient(loss, x).numpy()
check(np.allclose(grad, sum(inputs(r, 4001, 10, np.float32) for r in range(SIZE)) / SIZE, rtol=0, atol=1e-6),
      "allreduce average gradient")

# Broadcast from every root, several dtypes, an empty tensor.
for root in range(SIZE):
    for dtype, shape in [(np.float32, (3, 4)), (np.int64, (5,)), (np.bool_, (7,)), (np.float32, (0, 3))]:
        mine = (inputs(RANK, 5000 + root, int(np.prod(shape)), np.int32) > 0).astype(dtype).reshape(shape)
        want = (inputs(root, 5000 + root, int(np.prod(shape)), np.int32) > 0).astype(dtype).reshape(shape)
        got = matex.broadcast(tf.constant(mine), root_rank=root).numpy()
        check(got.shape == shape and np.array_equal(got, want), f"broadcast root {root} {np.dtype(dtype).name} {shape}")

# Allgather: rank r gives r+1 rows (rank 0 none in the second case), or rows of width 0.
for case, rows_of, width in [("growing", lambda r: r + 1, 3), ("rank 0 empty", lambda r: r, 2),
                             ("zero width", lambda r: r + 2, 0)]:
    def block(r):
        return inputs(r, 6000, rows_of(r) * width, np.float32).reshape(rows_of(r), width)
    got = matex.allgather(tf.constant(block(RANK))).numpy()
    want = np.concatenate([block(r) for r in range(SIZE)], axis=0)
    check(got.shape == want.shape and np.array_equal(got, want), f"allgather {case}")
flags = matex.allgather(tf.constant([RANK % 2 == 0])).numpy()
check(flags.tolist() == [r % 2 == 0 for r in range(SIZE)], "allgather bool")

# A shape that differs on one rank fails on every rank, naming the tensor (FailedPrecondition, as Horovod's ops
# report ranks that disagree); then all goes on.
if SIZE > 1:
    try:
        matex.allreduce(tf.ones([3 if RANK == SIZE - 1 else 4]), op="sum", name="differs/shape")
        check(False, "mismatched shapes raised nothing")
    except tf.errors.FailedPreconditionError as error:
        check("differs/shape" in str(error), f"mismatch error names the tensor: {error}")
    after = matex.allreduce(tf.ones([4]), op="sum").numpy()
    check(np.array_equal(after, np.full(4, SIZE, np.float32)), "allreduce after a mismatch")

# What one rank cannot serve (an integer average, a scalar to allgather, a root outside the job) fails on every
# rank, quoting that rank's reason, instead of leaving the others waiting; then all goes on.
if SIZE > 1:
    last = SIZE - 1
    refused = [
        ("refused/int_average", lambda: matex.allreduce(tf.constant([RANK] * 3, tf.int32 if RANK == last else
                                                                    tf.float32), op="average",
                                                        name="refused/int_average"), "floating dtype"),
        ("refused/scalar", lambda: matex.allgather(tf.constant(1.0) if RANK == last else tf.ones([2]),
                                                   name="refused/scalar"), "not a scalar"),
        ("refused/root", lambda: matex.broadcast(tf.ones([2]), root_rank=SIZE if RANK == last else 0,
                                                 name="refused/root"), f"root_rank {SIZE}"),
    ]
    for name, call, reason in refused:
        try:
            call()
            check(False, f"{name}: refused on rank {last} and raised nothing on rank {RANK}")
        except tf.errors.InvalidArgumentError as error:
            check(name in str(error) and reason in str(error) and f"rank {last}" in str(error).replace("ranks", "rank"),
                  f"{name}: the error names the tensor, rank {last} and its reason: {error}")
    after = matex.allreduce(tf.ones([3]), op="sum", name="after/refusals").numpy()
    check(np.array_equal(after, np.full(3, SIZE, np.float32)), "allreduce after refusals")

# Inside XLA-compiled functions (the ops' XLA:CPU lowerings, when the library has them): a group of edge
# counts and dtypes, reductions, broadcast from the last rank, allgather of equal rows; the compiled program
# must hold the custom calls (not a fallback), and rows that differ between ranks fail on every rank.
matex_native = sys.modules["matex._runtime"]
if matex_native.xla_lowers_collectives():
    XLA_GROUP = [(0, np.float32), (1, np.float32), (7, np.float64), (1023, np.int32), (13, tf.bfloat16.as_numpy_dtype)]

    @tf.function(jit_compile=True)
    def xla_step(tensors, flags, rows):
        summed = matex.allreduce([t * 1 for t in tensors], op="sum")
        biggest = matex.allreduce(tensors[2], op="max")
        average = matex.allreduce(tensors[1] * SIZE, op="average")  # multiples of SIZE: an exact mean
        return summed, biggest, average, matex.broadcast(flags, root_rank=SIZE - 1), matex.allgather(rows)

    def xla_inputs(r, k):
        return ([tf.constant(inputs(r, 7000 + k + i, n, d)) for i, (n, d) in enumerate(XLA_GROUP)],
                tf.constant(inputs(r, 7100 + k, 6, np.int32) > 0), tf.constant(inputs(r, 7200 + k, 8, np.int64).reshape(2, 4)))

    for k in range(2):  # the second call runs the compiled program again
        mine = xla_inputs(RANK, k)
        everyone = [xla_inputs(r, k) for r in range(SIZE)]
        summed, biggest, average, flags, rows = xla_step(*mine)
        for i, (n, d) in enumerate(XLA_GROUP):
            want = sum(e[0][i].numpy().astype(np.float64) for e in everyone)
            check(np.array_equal(summed[i].numpy().astype(np.float64), want) and summed[i].shape == (n,),
                  f"XLA allreduce sum {np.dtype(d).name} count {n} (call {k})")
        check(np.array_equal(biggest.numpy(), np.max([e[0][2].numpy() for e in everyone], axis=0)), f"XLA max {k}")
        check(np.array_equal(average.numpy(), sum(e[0][1].numpy() for e in everyone)), f"XLA average {k}")
        check(np.array_equal(flags.numpy(), everyone[-1][1].numpy()), f"XLA broadcast bool from the last rank {k}")
        check(np.array_equal(rows.numpy(), np.concatenate([e[2].numpy() for e in everyone])), f"XLA allgather {k}")
    hlo = xla_step.experimental_get_compiler_ir(*xla_inputs(RANK, 0))(stage="hlo")
    check(hlo.count("matex_xla_host_collective") == 4 + len(XLA_GROUP) - 1,
          "the compiled program calls matex once per collective (one grouped call per dtype)")

    if SIZE > 1:
        @tf.function(jit_compile=True)
        def xla_gather(x):
            return matex.allgather(x, name="differs/rows")
        # Rows 1, 2, ..., 2, 3: the middle ranks give the average, and must fail as well.
        try:
            xla_gather(tf.ones([1 if RANK == 0 else 3 if RANK == SIZE - 1 else 2, 2]))
            check(False, "XLA allgather of rows that differ between ranks raised nothing")
        except tf.errors.OpError as error:
            check("differs/rows" in str(error) and "same first dimension" in str(error),
                  f"XLA allgather mismatch names the tensor: {error}")
        check(np.array_equal(xla_step(*xla_inputs(RANK, 0))[2].numpy(),
                             sum(xla_inputs(r, 0)[0][1].numpy() for r in range(SIZE))), "XLA after a mismatch")

# GPU kernels (host-staged) are registered whenever TensorFlow has CUDA (the test build forces them on).
if tf.test.is_built_with_cuda():
    from tensorflow.python.framework import kernels
    for op in ("MatexAllreduce", "MatexBroadcast", "MatexAllgather"):
        devices = {k.device_type for k in kernels.get_registered_kernels_for_op(op).kernel}
        want = {"CPU", "GPU"} | ({"XLA_CPU_JIT"} if matex_native.xla_lowers_collectives() else set())
        check(devices == want, f"{op} kernels for {sorted(want)}, found {sorted(devices)}")

failed = np.array([len(FAILURES)], np.int64)
total = int(matex.allreduce(tf.constant(failed), op="sum").numpy()[0])
if RANK == 0:
    print(f"{'PASS' if total == 0 else 'FAIL'}: TensorFlow ops on {SIZE} ranks, {total} failure(s)", flush=True)
matex.shutdown()
sys.exit(1 if total else 0)
