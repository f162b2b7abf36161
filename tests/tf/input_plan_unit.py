"""The input planner (matex/_input_plan.py) on one process, no MPI: for each
simulated rank count N and rank r the pipeline is built afresh (same seeds),
planned for (r, N), and the ranks' batches, put side by side in rank order,
must equal the plain pipeline's batches, batch by batch, over two epochs.
Each map's calls are counted per rank: they must be the rank's rows only.
Pipelines the planner must not cut are checked to return its reason.

N is 2 and 5 (and 3 for the first pipelines). Run: PYTHONPATH=<package dir> python3 tests/tf/input_plan_unit.py
"""
import os
import sys
import tempfile

import numpy as np
import tensorflow as tf

from matex import _input_plan

failures = []
calls = [0]


def counted(x):
    calls[0] += 1
    return x


def py_count(x):
    """A pure py_function map (doubles its element) that counts its calls."""
    def double(v):
        calls[0] += 1
        return v * 2
    y = tf.py_function(double, [x], x.dtype)
    y.set_shape(x.shape)
    return y


def check(name, condition, detail=""):
    if not condition:
        failures.append(f"{name}: {detail}")
        print(f"FAIL {name}: {detail}", flush=True)


def batches(dataset, epochs=2):
    return [[tf.nest.map_structure(lambda t: t.numpy(), b) for b in dataset] for _ in range(epochs)]


def same(a, b):
    fa, fb = tf.nest.flatten(a), tf.nest.flatten(b)
    return len(fa) == len(fb) and all(x.shape == y.shape and np.array_equal(x, y) for x, y in zip(fa, fb))


def joined(parts):
    return tf.nest.map_structure(lambda *p: np.concatenate(p, axis=0), *parts)


def rows_of(batch):
    return tf.nest.flatten(batch)[0].shape[0]


# Windows the parallel interleave may map beyond a take() after the batch (its cycle and buffers).
WINDOWS_READ_AHEAD = 16


def check_exact(name, build, sizes=(2, 5), read_ahead=0, count_calls=True):
    """build() -> dataset; the planned ranks together must give build()'s batches."""
    tf.random.set_seed(7)
    calls[0] = 0
    reference = batches(build())
    plain_calls = calls[0]
    for n in sizes:
        per_rank, rank_calls = [], []
        for r in range(n):
            tf.random.set_seed(7)
            planned, why = _input_plan.plan(build(), r, n)
            check(f"{name} N={n} r={r} planned", planned is not None and why is None, why)
            if planned is None:
                return
            calls[0] = 0
            per_rank.append(batches(planned))
            rank_calls.append(calls[0])
        for epoch, ref_epoch in enumerate(reference):
            check(f"{name} N={n} batches in epoch {epoch}",
                  all(len(p[epoch]) == len(ref_epoch) for p in per_rank),
                  f"{[len(p[epoch]) for p in per_rank]} vs {len(ref_epoch)}")
            for g, ref in enumerate(ref_epoch):
                parts = [p[epoch][g] for p in per_rank if g < len(p[epoch])]
                if len(parts) != n or not same(joined(parts), ref):
                    check(f"{name} N={n} epoch {epoch} batch {g}", False,
                          f"slices {[rows_of(p) for p in parts]} differ from the plain batch of {rows_of(ref)}")
                    break
        rows = [sum(rows_of(b) for e in p for b in e) for p in per_rank]
        if plain_calls and count_calls:
            # Each map call is one of the rank's rows; a rank with an empty slice of a batch whose row shape
            # is not static maps one row to learn it; with take() after the batch, windows in flight map
            # rows that are never used (`read_ahead` of them per epoch at most).
            check(f"{name} N={n} map calls", all(c >= k for c, k in zip(rank_calls, rows))
                  and sum(rank_calls) <= plain_calls + n * 2 + 2 * read_ahead and sum(rows) <= plain_calls,
                  f"calls {rank_calls}, rows {rows}, one process {plain_calls}")
        print(f"ok {name} N={n}: map calls {rank_calls} (one process {plain_calls})", flush=True)


def check_not_planned(name, dataset, words):
    planned, why = _input_plan.plan(dataset, 0, 2)
    check(f"{name} not planned", planned is None and why and all(w in why for w in words), why)
    print(f"ok {name}: {why}", flush=True)


def slices(count, batch, drop=False, parallel=4):
    return lambda: (tf.data.Dataset.from_tensor_slices(tf.range(count, dtype=tf.float32))
                    .shuffle(count, seed=5, reshuffle_each_iteration=True)
                    .map(py_count, num_parallel_calls=parallel).batch(batch, drop_remainder=drop).prefetch(2))


for drop in (False, True):
    check_exact(f"slices(100) batch(32) drop={drop}", slices(100, 32, drop), sizes=(2, 3, 5))
check_exact("last batch shorter than N (98 rows, batch 32)", slices(98, 32))
check_exact("batch smaller than N (batch 2)", slices(9, 2), sizes=(3, 5))
check_exact("two maps, sequential", lambda: tf.data.Dataset.range(50).map(lambda x: tf.cast(x, tf.float32))
            .map(py_count).map(lambda x: x + 1.0).batch(8).repeat(2).take(11), read_ahead=WINDOWS_READ_AHEAD * 8)

check_exact("cache and assert_cardinality after the batch", lambda: tf.data.Dataset.range(40).map(
    lambda x: py_count(tf.cast(x, tf.float32))).batch(6).cache().apply(tf.data.experimental.assert_cardinality(7)),
    count_calls=False)  # the second epoch reads the cache
check_exact("repeat before the batch, take after", lambda: tf.data.Dataset.range(10).repeat().map(
    lambda x: py_count(tf.cast(x, tf.float32))).batch(4).take(6), sizes=(2, 3),
    read_ahead=WINDOWS_READ_AHEAD * 4)

check_exact("repeat, skip and take between the maps and the batch", lambda: tf.data.Dataset.range(30).shuffle(
    30, seed=4).map(py_count).repeat(2).map(lambda x: x + 1).skip(3).take(47).batch(8), sizes=(2, 3))


def tuples():
    x = tf.reshape(tf.range(60, dtype=tf.float32), [30, 2])
    ds = tf.data.Dataset.from_tensor_slices((x, tf.range(30))).shuffle(30, seed=1)
    return ds.map(lambda a, b: (py_count(a), b * 3), num_parallel_calls=2).batch(7)


def dicts():
    ds = tf.data.Dataset.from_tensor_slices({"a": tf.range(23), "b": tf.ones([23, 3])})
    return ds.map(lambda d: {"a": d["a"] + 1, "b": py_count(d["b"])}).batch(6)


def unknown_row_shape():
    return tf.data.Dataset.range(13).map(lambda x: tf.reshape(py_count(tf.fill([3], x)), [-1])).batch(4)


check_exact("tuple elements", tuples)
check_exact("dict elements", dicts)
check_exact("rows of unknown static shape", unknown_row_shape, sizes=(2, 5))

with tempfile.TemporaryDirectory() as directory:
    for f in range(3):
        with open(os.path.join(directory, f"part{f}.csv"), "w") as out:
            out.writelines(f"{f * 100 + i},{i * 0.5}\n" for i in range(37))

    def text_files():
        files = tf.data.Dataset.list_files(os.path.join(directory, "*.csv"), seed=3)
        lines = files.interleave(tf.data.TextLineDataset, cycle_length=2)
        parsed = lines.shuffle(50, seed=2).map(
            lambda line: dict(zip(("id", "v"), tf.io.decode_csv(line, [[0], [0.0]]))))
        return parsed.map(lambda d: {"id": d["id"], "v": py_count(d["v"])}, num_parallel_calls=3).batch(16)

    check(f"text files have unknown cardinality", int(text_files().cardinality()) == -2)
    check_exact("text files through interleave", text_files, sizes=(2, 3))

# Keras' adapters: NumPy arrays (the gather of an index batch) and a dataset with class weights.
import keras  # noqa: E402
from keras.src.trainers import data_adapters  # noqa: E402

x, y = np.arange(101 * 3, dtype="float32").reshape(101, 3), np.arange(101) % 2
check_exact("Keras NumPy adapter, shuffled", lambda: data_adapters.get_data_adapter(
    x, y, batch_size=16, shuffle=True).get_tf_dataset())
check_exact("Keras dataset adapter with class_weight", lambda: data_adapters.get_data_adapter(
    tf.data.Dataset.from_tensor_slices((x, y)).map(lambda a, b: (py_count(a), b)).batch(10),
    class_weight={0: 1.0, 1: 3.0}).get_tf_dataset())

# What must stay replicated, with the reason naming the op.
base = tf.data.Dataset.range(20).map(lambda v: tf.cast(v, tf.float32))
check_not_planned("stateful random map", base.map(lambda v: v + tf.random.uniform([])).batch(4),
                  ["RandomUniform"])
counter = tf.Variable(0)
check_not_planned("variable write", base.map(lambda v: v + tf.cast(counter.assign_add(1), tf.float32)).batch(4),
                  ["AssignAddVariableOp"])


def noisy(v):
    return v + np.random.rand()


check_not_planned("py_function drawing from NumPy", base.map(
    lambda v: tf.py_function(noisy, [v], tf.float32)).batch(4), ["noisy", "rand"])
noise = keras.layers.GaussianNoise(0.1, seed=1)
check_not_planned("keras random layer", base.map(lambda v: noise(tf.reshape(v, [1, 1]), training=True)).batch(4),
                  ["AssignVariableOp"])
check_not_planned("map after batch", base.map(py_count).batch(4).map(lambda b: b - tf.reduce_mean(b)),
                  ["after the batch"])
check_not_planned("filter after the map", base.map(py_count).filter(lambda v: v > 3).batch(4), ["Filter"])
check_not_planned("padded_batch", base.map(lambda v: tf.fill([tf.cast(v, tf.int32) % 3], v)).padded_batch(4),
                  ["PaddedBatch"])
check_not_planned("generator of batches", tf.data.Dataset.from_generator(
    lambda: (np.ones([4, 2]) for _ in range(3)), output_signature=tf.TensorSpec([None, 2], tf.float64)),
    ["no batch"])
check_not_planned("non-deterministic map", base.map(py_count, num_parallel_calls=2, deterministic=False).batch(4),
                  ["deterministic=False"])
check_not_planned("file cache after the batch", base.map(py_count).batch(4).cache(
    os.path.join(tempfile.gettempdir(), "matex_plan_cache")), ["file cache"])
check_not_planned("no map", tf.data.Dataset.range(20).shuffle(20, seed=1).batch(4), ["nothing to save"])
planned, why = _input_plan.plan(base.map(lambda v: v + tf.random.uniform([])).map(py_count).batch(4), 0, 2)
check("pure map below a random one is cut", planned is not None and "RandomUniform" in (why or ""), why)


def check_statistical(name, build, sizes=(2, 3)):
    """statistical across a random map (noise in [0, 0.5) added to whole numbers): each rank's rows are
    the exact plan's (their whole parts match the plain batches'), and the draws run on from window to
    window instead of restarting in each (a window's first row differs from the previous window's)."""
    reference = batches(build(), epochs=1)[0]
    for n in sizes:
        parts = []
        for r in range(n):
            planned, why = _input_plan.plan(build(), r, n, statistical=True)
            check(f"{name} N={n} r={r} planned", planned is not None and why is None, why)
            if planned is None:
                return
            parts.append(batches(planned, epochs=1)[0])
        check(f"{name} N={n} batches", all(len(p) == len(reference) for p in parts),
              f"{[len(p) for p in parts]} vs {len(reference)}")
        for g, ref in enumerate(reference):
            whole = np.floor(np.concatenate([p[g] for p in parts]))
            check(f"{name} N={n} batch {g} rows", np.array_equal(whole, np.floor(ref)), f"{whole} vs {ref}")
        noise = [p[g][0] % 1 for p in parts for g in range(len(reference) - 1) if len(p[g]) and len(p[g + 1])
                 and p[g][0] % 1 == p[g + 1][0] % 1]
        check(f"{name} N={n} draws run on", not noise, f"{len(noise)} windows repeat the previous one's draw")
        print(f"ok {name} N={n}: statistical rows in place, draws not repeated", flush=True)


check_statistical("statistical across a random map", lambda: tf.data.Dataset.range(43).map(
    lambda v: tf.cast(v, tf.float32) * 2.0).map(lambda v: v + tf.random.uniform([], 0.0, 0.5, seed=3)).batch(8))

if failures:
    print(f"{len(failures)} failure(s)")
    sys.exit(1)
print("input plan: all checks passed")
