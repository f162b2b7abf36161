"""python bench/tf_xla_step_time.py [--runs 3] [--mpirun mpirun]

What XLA is worth to a step, and what MATEX_ENABLE=1 does with a script that
asks for it: a small CNN (tests/tf/jit_custom_step.py's loop with two
Conv2D layers and SGD) whose step is
tf.function(jit_compile=True), timed per step from outside the script, in
four runs: plainly with XLA, plainly with XLA off (the same script with
jit_compile=False), and with MATEX_ENABLE=1 on 1 rank (no collective in the
step, so XLA compiles it; mpirun binds the rank to one core) and on 2 ranks
(the step holds the allreduce and runs without XLA: matex's collectives have
no XLA kernel yet). Prints the median step time of each (rank 0's under
mpirun). Timing only: no assertion.
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
    cases = [("plain, XLA", [sys.executable, scripts["True"]], plain),
             ("plain, no XLA", [sys.executable, scripts["False"]], plain),
             ("MATEX_ENABLE=1, 1 rank", [options.mpirun, "-np", "1", sys.executable, scripts["True"]], enabled),
             ("MATEX_ENABLE=1, 2 ranks", [options.mpirun, "-np", "2", "--oversubscribe", sys.executable,
                                          scripts["True"]], enabled)]
    medians = {name: [] for name, _, _ in cases}
    for index in range(options.runs):
        for name, command, env in cases:
            medians[name].append(run(command, env))
            print(f"run {index + 1}: {name:<24} {medians[name][-1]:8.2f} ms", flush=True)
    print("# median step time (global batch 64, 16 steps an epoch, 3 epochs, the first 4 steps left out):")
    for name, _, _ in cases:
        print(f"#   {name:<24} {statistics.median(medians[name]):8.2f} ms")


if __name__ == "__main__":
    main()
