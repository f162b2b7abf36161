"""python bench/scripts/tf_activation_overhead.py [--runs 5] [script.py]

The price of MATEX_ENABLE=1 on one rank: runs an unmodified Keras script
(default examples/keras_fit_numpy.py) alternately with and without activation,
times every fit step with a callback added from outside the script (the time
from on_train_batch_begin to on_train_batch_end), and prints the median step
time of each run and the ratio of the medians. Timing only: no assertion.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

_CHILD = r'''
import json, runpy, sys, time
import keras
times = []
class StepTimer(keras.callbacks.Callback):
    def on_train_batch_begin(self, batch, logs=None):
        self.start = time.perf_counter()
    def on_train_batch_end(self, batch, logs=None):
        times.append(time.perf_counter() - self.start)
fit = keras.Model.fit
def timed_fit(self, *args, **kwargs):
    kwargs["callbacks"] = list(kwargs.get("callbacks") or []) + [StepTimer()]
    return fit(self, *args, **kwargs)
keras.Model.fit = timed_fit
sys.argv = [sys.argv[1]]
runpy.run_path(sys.argv[0], run_name="__main__")
steady = sorted(times[5:])  # the first steps trace the train function
print("MATEX_STEP_TIMES " + json.dumps({"median_ms": 1e3 * steady[len(steady) // 2], "steps": len(times)}))
'''


def run(script, enabled):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", MATEX_ENABLE="1" if enabled else "0")
    out = subprocess.run([sys.executable, "-c", _CHILD, script], env=env, capture_output=True, text=True)
    for line in out.stdout.splitlines():
        if line.startswith("MATEX_STEP_TIMES "):
            return json.loads(line.split(" ", 1)[1])
    which = "with" if enabled else "without"
    sys.exit(f"run failed ({which} MATEX_ENABLE=1):\n{out.stdout[-2000:]}{out.stderr[-2000:]}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[1])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("script", nargs="?", default=os.path.join(os.path.dirname(__file__), "..", "..", "examples",
                                                                  "keras_fit_numpy.py"))
    options = parser.parse_args()
    medians = {False: [], True: []}
    print(f"{'run':>4} {'MATEX_ENABLE':>12} {'steps':>6} {'median step (ms)':>17}")
    for index in range(options.runs):
        for enabled in (False, True):
            result = run(options.script, enabled)
            medians[enabled].append(result["median_ms"])
            print(f"{index + 1:>4} {int(enabled):>12} {result['steps']:>6} {result['median_ms']:>17.3f}", flush=True)
    off, on = statistics.median(medians[False]), statistics.median(medians[True])
    print(f"# median of the medians: {off:.3f} ms without, {on:.3f} ms with MATEX_ENABLE=1 on 1 rank: "
          f"ratio {on / off:.3f}")


if __name__ == "__main__":
    main()
