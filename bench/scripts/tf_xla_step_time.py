"""python bench/scripts/tf_xla_step_time.py [--runs 3] [--mpirun mpirun]

What XLA is worth to a step, plainly and with MATEX_ENABLE=1: a small CNN
(tests/tf/jit_custom_step.py's loop with two Conv2D layers and SGD) whose
step is tf.function(jit_compile=True) or, in the same script otherwise,
jit_compile=False, timed per step from outside the script, plainly and with
MATEX_ENABLE=1 on 1 rank and on 2 ranks (global batch 64: 32 rows a rank).
Under activation XLA:CPU compiles the step with matex's allreduce inside it
(ops/xla_lowerings.cc). mpirun binds each rank to one core. Prints the
median step time of each (rank 0's under mpirun). Timing only: no assertion.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

_SCRIPT = r'''
import json, time
import numpy as np
import tensorflow as tf
import keras
rng = np.random.default_rng(3)
x = rng.normal(size=(1024, 32, 32, 3)).astype("float32")
y = rng.integers(0, 10, size=(1024,)).astype("int32")
ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(64)
keras.utils.set_random_seed(2)
model = keras.Sequential([keras.Input(shape=(32, 32, 3)),
                          keras.layers.Conv2D(32, 3, activation="relu"), keras.layers.MaxPooling2D(),
                          keras.layers.Conv2D(64, 3, activation="relu"), keras.layers.GlobalAveragePooling2D(),
                          keras.layers.Dense(10)])
loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
opt = keras.optimizers.SGD(0.01)
@tf.function(jit_compile=JIT)
def step(a, b):
    with tf.GradientTape() as tape:
        loss = loss_fn(b, model(a, training=True))
    g = tape.gradient(loss, model.trainable_variables)
    opt.apply_gradients(zip(g, model.trainable_variables))
    return loss
times = []
for epoch in range(3):
    for a, b in ds:
        start = time.perf_counter()
        float(step(a, b))
        times.append(time.perf_counter() - start)
steady = sorted(times[4:])
print("MATEX_STEP_TIMES " + json.dumps({"median_ms": 1e3 * steady[len(steady) // 2], "steps": len(times)}))
'''


def run(command, env):
    out = subprocess.run(command, env=env, capture_output=True, text=True)
    for line in out.stdout.splitlines():
        if line.startswith("MATEX_STEP_TIMES "):
            return json.loads(line.split(" ", 1)[1])["median_ms"]
    sys.exit(f"run failed: {' '.join(command)}\n{out.stdout[-2000:]}{out.stderr[-2000:]}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[1])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--mpirun", default="mpirun")
    options = parser.parse_args()
    work = tempfile.mkdtemp(prefix="matex-xla-bench-")
    scripts = {}
    for jit in ("True", "False"):
        scripts[jit] = os.path.join(work, f"step_jit_{jit}.py")
        with open(scripts[jit], "w") as out:
            out.write(_SCRIPT.replace("JIT", jit))
    plain = {k: v for k, v in os.environ.items() if not k.startswith("MATEX_")}
    plain["TF_CPP_MIN_LOG_LEVEL"] = "3"
    enabled = dict(plain, MATEX_ENABLE="1")
    cases = []
    for jit, label in (("True", "XLA"), ("False", "no XLA")):
        cases.append((f"plain, {label}", [sys.executable, scripts[jit]], plain))
        for ranks in (1, 2):
            cases.append((f"MATEX_ENABLE=1, {ranks} rank{'s' if ranks > 1 else ''}, {label}",
                          [options.mpirun, "-np", str(ranks), "--oversubscribe", sys.executable, scripts[jit]],
                          enabled))
    medians = {name: [] for name, _, _ in cases}
    for index in range(options.runs):
        for name, command, env in cases:
            medians[name].append(run(command, env))
            print(f"run {index + 1}: {name:<32} {medians[name][-1]:8.2f} ms", flush=True)
    print("# median step time (global batch 64, 16 steps an epoch, 3 epochs, the first 4 steps left out):")
    for name, _, _ in cases:
        print(f"#   {name:<32} {statistics.median(medians[name]):8.2f} ms")


if __name__ == "__main__":
    main()
