"""build/venv/bin/python bench/scripts/tf_input_scaling.py [--runs 3] [--mpirun mpirun]

What input sharding is worth: Keras fit on one input-bound pipeline and one
compute-bound model, plainly on one process and with MATEX_ENABLE=1 on 2
ranks (MATEX_INPUT_SHARDING=replicate, today's N-fold input work, and auto).
- input-bound: 2560 rows -> shuffle(seed) -> map (a py_function that
  busy-waits 2 ms, output a function of its input) -> batch(64) -> a small
  Dense model. Python maps hold the GIL, so one process maps on one core.
- compute-bound: NumPy input (12288 x 512), four Dense layers of 1024,
  batch 512, no map: about 11 GFLOP per step against 14.7 MB of gradients
  (at batch 64 the same model is bound by its allreduce on this machine).
The compute-bound model also runs with its 2 ranks started unbound
(--bind-to none), with MATEX_THREADS=off (each rank sizes TensorFlow's pools
for the whole machine) and auto (the thread budget binds them apart).
Each run is one epoch of 40 steps and prints, from inside the script: map
calls per rank, samples per second in the steady state (from the end of the
fifth step to the end of the last, rank 0's clock; every rank steps together),
and the thread budget the rank ran with (CPUs in its affinity, TF's intra-op
and inter-op pools: 0 means TF's default, every CPU of the affinity). The
medians of --runs runs are printed at the end. Timing only: no assertion.
Run it with a Python whose site-packages holds matex (its .pth activates
MATEX_ENABLE=1): build/venv/bin/python, or one where matex is pip-installed.
It stops when matex did not activate on a MATEX_ENABLE=1 run.
Across the testbed's hosts: MATEX_TESTBED_SHAPE=2x1 ... --mpirun
tests/cluster/mpirun_on_hosts.sh
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

_SCRIPT = r'''
import json, os, sys, time
import numpy as np
import tensorflow as tf
import keras
KIND = "KIND_VALUE"
calls = [0]
def busy(v):
    calls[0] += 1
    end = time.perf_counter() + 0.002
    while time.perf_counter() < end:
        pass
    return v * 0.5
def busy_map(a, b):
    out = tf.py_function(busy, [a], tf.float32)
    out.set_shape(a.shape)
    return out, b
rows, batch = 2560, 64
rng = np.random.default_rng(0)
keras.utils.set_random_seed(1)
if KIND == "input":
    x = rng.normal(size=(rows, 32)).astype("float32")
    y = rng.normal(size=(rows, 1)).astype("float32")
    data = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(rows, seed=3).map(busy_map).batch(64).prefetch(2)
    layers = [keras.layers.Dense(64, activation="relu")]
    width = 32
else:
    rows, batch = 512 * 24, 512
    x = rng.normal(size=(rows, 512)).astype("float32")
    y = rng.normal(size=(rows, 1)).astype("float32")
    data = None
    layers = [keras.layers.Dense(1024, activation="relu") for _ in range(4)]
    width = 512
model = keras.Sequential([keras.Input((width,))] + layers + [keras.layers.Dense(1)])
model.compile(keras.optimizers.SGD(0.01), "mse")
class Clock(keras.callbacks.Callback):
    """Steady state: the time from the end of batch SKIP to the end of the last
    batch (Keras starts the next epoch's iterator after it, whose prefetching
    would otherwise be counted), and the map calls made up to then."""
    def __init__(self):
        super().__init__()
        self.stamps = []
    def on_train_batch_end(self, batch, logs=None):
        self.stamps.append((time.perf_counter(), calls[0]))
clock = Clock()
if data is not None:
    model.fit(data, epochs=1, verbose=0, callbacks=[clock])
else:
    model.fit(x, y, batch_size=batch, epochs=1, verbose=0, callbacks=[clock])
SKIP = 4
steady_seconds = clock.stamps[-1][0] - clock.stamps[SKIP][0]
steady_rows = batch * (len(clock.stamps) - 1 - SKIP)
rank = int(os.environ.get("OMPI_COMM_WORLD_RANK", "0"))
budget = {"cpus": len(os.sched_getaffinity(0)), "intra": tf.config.threading.get_intra_op_parallelism_threads(),
          "inter": tf.config.threading.get_inter_op_parallelism_threads()}
with open(os.path.join(os.environ["INPUT_SCALING_OUT"], f"rank{rank}.json"), "w") as out:
    json.dump({"rank": rank, "map_calls": clock.stamps[-1][1], "samples_per_s": steady_rows / steady_seconds,
               "budget": budget, "matex_active": "matex" in sys.modules}, out)
'''


def run(command, env):
    """Each rank's record (the ranks write one file each: mpirun may interleave their output lines)."""
    with tempfile.TemporaryDirectory() as directory:
        out = subprocess.run(command, env=dict(env, INPUT_SCALING_OUT=directory), capture_output=True, text=True)
        records = []
        for name in sorted(os.listdir(directory)):
            with open(os.path.join(directory, name)) as f:
                records.append(json.load(f))
    if not records or out.returncode != 0:
        sys.exit(f"run failed: {' '.join(command)}\n{out.stdout[-2000:]}{out.stderr[-2000:]}")
    if env.get("MATEX_ENABLE") == "1" and not all(r["matex_active"] for r in records):
        # Without matex's .pth in this Python's site-packages, MATEX_ENABLE=1 does nothing: the ranks would
        # each train alone and the figures would mean nothing.
        sys.exit(f"matex did not activate under MATEX_ENABLE=1 with {sys.executable}: run this script with a "
                 "Python whose site-packages holds matex (pip install, or build/venv/bin/python)")
    return sorted(records, key=lambda r: r["rank"])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[1])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--mpirun", default="mpirun")
    options = parser.parse_args()
    work = tempfile.mkdtemp(prefix="matex-input-bench-")
    plain = {k: v for k, v in os.environ.items() if not k.startswith("MATEX_")}
    plain["TF_CPP_MIN_LOG_LEVEL"] = "3"
    cases = []
    for kind in ("input", "compute"):
        script = os.path.join(work, f"{kind}.py")
        with open(script, "w") as out:
            out.write(_SCRIPT.replace("KIND_VALUE", kind))
        cases.append((f"{kind}: plain, 1 process", [sys.executable, script], plain))
        modes = ("replicate", "auto") if kind == "input" else ("auto",)
        for mode in modes:
            env = dict(plain, MATEX_ENABLE="1", MATEX_INPUT_SHARDING=mode)
            # No --oversubscribe: Open MPI binds each of the 2 ranks to one core.
            cases.append((f"{kind}: 2 ranks, {mode}", [options.mpirun, "-np", "2", sys.executable, script], env))
        if kind == "compute":
            # Started unbound (as --oversubscribe or a socket binding leaves ranks): with and without the budget.
            for threads in ("off", "auto"):
                cases.append((f"{kind}: 2 unbound, THREADS={threads}",
                              [options.mpirun, "-np", "2", "--bind-to", "none", sys.executable, script],
                              dict(plain, MATEX_ENABLE="1", MATEX_THREADS=threads)))
    results = {name: [] for name, _, _ in cases}
    for index in range(options.runs):
        for name, command, env in cases:
            records = run(command, env)
            results[name].append(records)
            calls = "/".join(str(r["map_calls"]) for r in records)
            budgets = " ".join(f"{r['budget']['cpus']}cpu/{r['budget']['intra']}/{r['budget']['inter']}"
                               for r in records)
            print(f"run {index + 1}: {name:<28} {records[0]['samples_per_s']:9.1f} samples/s  map calls "
                  f"{calls}  budget (cpus/intra/inter) {budgets}", flush=True)
    print("# median samples/s in fit's steady state, and relative to 1 process:")
    base = {}
    for name, _, _ in cases:
        kind = name.split(":")[0]
        median = statistics.median(r[0]["samples_per_s"] for r in results[name])
        base.setdefault(kind, median)
        print(f"#   {name:<28} {median:9.1f}  {median / base[kind]:5.2f}x")


if __name__ == "__main__":
    main()
