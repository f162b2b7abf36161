"""python bench/tf_input_scaling.py [--runs 3] [--mpirun mpirun]

What input sharding is worth: Keras fit on one input-bound pipeline and one
compute-bound model, plainly on one process and with MATEX_ENABLE=1 on 2
ranks (MATEX_INPUT_SHARDING=replicate, today's N-fold input work, and auto).
- input-bound: 1280 rows -> shuffle(seed) -> map (a py_function that
  busy-waits 2 ms, output a function of its input) -> batch(64) -> a small
  Dense model. Python maps hold the GIL, so one process maps on one core.
- compute-bound: NumPy input (1280 x 512), four Dense layers of 1024,
  batch(64), no map.
Each run prints, from inside the script: map calls per rank, samples per
second of fit's second epoch (rank 0's clock; every rank steps together),
and the thread budget the rank ran with (CPUs in its affinity, TF's intra-op
and inter-op pools: 0 means TF's default, every CPU of the affinity). The
medians of --runs runs are printed at the end. Timing only: no assertion.
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
rows = 1280
rng = np.random.default_rng(0)
keras.utils.set_random_seed(1)
if KIND == "input":
    x = rng.normal(size=(rows, 32)).astype("float32")
    y = rng.normal(size=(rows, 1)).astype("float32")
    data = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(rows, seed=3).map(busy_map).batch(64).prefetch(2)
    layers = [keras.layers.Dense(64, activation="relu")]
    width = 32
else:
    x = rng.normal(size=(rows, 512)).astype("float32")
    y = rng.normal(size=(rows, 1)).astype("float32")
    data = None
    layers = [keras.layers.Dense(1024, activation="relu") for _ in range(4)]
    width = 512
model = keras.Sequential([keras.Input((width,))] + layers + [keras.layers.Dense(1)])
model.compile(keras.optimizers.SGD(0.01), "mse")
class Clock(keras.callbacks.Callback):
    def on_epoch_begin(self, epoch, logs=None):
        self.start = time.perf_counter()
    def on_epoch_end(self, epoch, logs=None):
        self.seconds = time.perf_counter() - self.start
clock = Clock()
if data is not None:
    model.fit(data, epochs=2, verbose=0, callbacks=[clock])
else:
    model.fit(x, y, batch_size=64, epochs=2, verbose=0, callbacks=[clock])
rank = int(os.environ.get("OMPI_COMM_WORLD_RANK", "0"))
budget = {"cpus": len(os.sched_getaffinity(0)), "intra": tf.config.threading.get_intra_op_parallelism_threads(),
          "inter": tf.config.threading.get_inter_op_parallelism_threads()}
print("MATEX_INPUT_SCALING " + json.dumps({"rank": rank, "map_calls": calls[0] // 2,
      "samples_per_s": rows / clock.seconds, "budget": budget}), flush=True)
'''


def run(command, env):
    out = subprocess.run(command, env=env, capture_output=True, text=True)
    records = [json.loads(line.split(" ", 1)[1]) for line in out.stdout.splitlines()
               if line.startswith("MATEX_INPUT_SCALING ")]
    if not records or out.returncode != 0:
        sys.exit(f"run failed: {' '.join(command)}\n{out.stdout[-2000:]}{out.stderr[-2000:]}")
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
    results = {name: [] for name, _, _ in cases}
    for index in range(options.runs):
        for name, command, env in cases:
            records = run(command, env)
            results[name].append(records)
            calls = "/".join(str(r["map_calls"]) for r in records)
            budgets = " ".join(f"{r['budget']['cpus']}cpu/{r['budget']['intra']}/{r['budget']['inter']}"
                               for r in records)
            print(f"run {index + 1}: {name:<28} {records[0]['samples_per_s']:9.1f} samples/s  map calls per "
                  f"epoch {calls}  budget (cpus/intra/inter) {budgets}", flush=True)
    print("# median samples/s of fit's second epoch, and relative to 1 process:")
    base = {}
    for name, _, _ in cases:
        kind = name.split(":")[0]
        median = statistics.median(r[0]["samples_per_s"] for r in results[name])
        base.setdefault(kind, median)
        print(f"#   {name:<28} {median:9.1f}  {median / base[kind]:5.2f}x")


if __name__ == "__main__":
    main()
