"""python -m matex.verify -np N [--virtual-nodes 2,2] [--also N[:LAYOUT] ...] [--rtol 1e-4] script.py [args...]

Runs an unmodified TensorFlow script with MATEX_ENABLE=1 on 1 rank and on N
ranks (under mpirun), collects what the activation logs on rank 0 per
optimizer step (MATEX_VERIFY_LOG: the L2 norm of every variable the optimizer
updated, and fit's loss per batch), prints the two runs side by side with the
largest relative difference, and exits non-zero when that difference exceeds
--rtol or the runs took different numbers of steps. Each --also adds another
distributed run (e.g. --also 4:2,2 for 4 ranks on virtual nodes 2,2) checked
against the same 1-rank run.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time


def _parse(argv):
    parser = argparse.ArgumentParser(prog="python -m matex.verify", description=__doc__.split("\n\n")[1])
    parser.add_argument("-np", dest="ranks", type=int, required=True, help="ranks of the distributed run (>= 2)")
    parser.add_argument("--virtual-nodes", default=None, help="MATEX_VIRTUAL_NODES of the distributed run, e.g. 2,2")
    parser.add_argument("--also", action="append", default=[], metavar="N[:LAYOUT]",
                        help="another distributed run against the same reference, e.g. 4:2,2")
    parser.add_argument("--rtol", type=float, default=1e-4, help="largest relative difference allowed (1e-4)")
    parser.add_argument("--mpirun", default=None, help="the launcher (default: MATEX_MPIRUN, mpirun)")
    parser.add_argument("script")
    parser.add_argument("args", nargs=argparse.REMAINDER)
    options = parser.parse_args(argv)
    if options.mpirun is None:
        from . import _runtime
        options.mpirun = _runtime.config("MATEX_MPIRUN")
    options.runs = [(options.ranks, options.virtual_nodes)]
    for extra in options.also:
        ranks, _, layout = extra.partition(":")
        if not ranks.isdigit():
            parser.error(f"--also {extra!r}: expected N or N:LAYOUT, e.g. 4:2,2")
        options.runs.append((int(ranks), layout or None))
    if any(ranks < 2 for ranks, _ in options.runs):
        parser.error("-np and --also need at least 2 ranks (the reference run has 1 rank)")
    if not os.path.exists(options.script):
        parser.error(f"no script {options.script}")
    if shutil.which(options.mpirun) is None:
        parser.error(f"launcher {options.mpirun!r} not found (set --mpirun or MATEX_MPIRUN)")
    return options


def _run(options, ranks, log, layout):
    env = dict(os.environ, MATEX_ENABLE="1", MATEX_VERIFY_LOG=log)
    env.pop("MATEX_VIRTUAL_NODES", None)
    if layout:
        env["MATEX_VIRTUAL_NODES"] = layout
    command = [options.mpirun, "-np", str(ranks), "--oversubscribe", sys.executable, options.script, *options.args]
    print(f"# {'MATEX_VIRTUAL_NODES=' + layout + ' ' if layout else ''}MATEX_ENABLE=1 {' '.join(command)}", flush=True)
    started = time.monotonic()
    done = subprocess.run(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    print(f"# the {ranks}-rank run took {time.monotonic() - started:.1f} s", flush=True)
    if done.returncode != 0:
        sys.stdout.write(done.stdout[-4000:])
        sys.exit(f"matex.verify: the {ranks}-rank run failed (exit status {done.returncode})")
    records = []
    if os.path.exists(log):
        with open(log) as lines:
            records = [json.loads(line) for line in lines if line.strip()]
    return records


# Variables that stay at rounding level: a convolution's bias in front of
# BatchNormalization has no gradient, and its norm (1e-9 to 1e-7 of the
# largest in float32) is rounding noise whose relative difference means
# nothing. A variable whose norm in the 1-rank run stays below _ROUNDING_LEVEL
# of its step's largest at every step is such a variable; it is compared in
# absolute terms, against _NOISE_FLOOR of the step's largest norm. Every other
# variable is compared relative to its own norm.
_ROUNDING_LEVEL = 1e-6
_NOISE_FLOOR = 1e-3


def _relative(a, b, floor=0.0):
    scale = max(abs(a), abs(b), floor)
    return 0.0 if scale == 0 else abs(a - b) / scale


def _rounding_level_variables(steps):
    """Indices of the variables whose norm stays at rounding level in the 1-rank run."""
    if not steps:
        return set()
    count = min(len(s["norms"]) for s in steps)
    return {i for i in range(count)
            if all(abs(s["norms"][i]) < _ROUNDING_LEVEL * max(map(abs, s["norms"])) for s in steps)}


def _norms_difference(a, b, noise):
    """The largest relative difference between two steps' norms (the
    rounding-level variables `noise` measured against the floor)."""
    floor = _NOISE_FLOOR * max((abs(v) for v in a + b), default=0.0)
    return max((_relative(x, y, floor if i in noise else 0.0) for i, (x, y) in enumerate(zip(a, b))), default=0.0)


def _compare(one, many, ranks, rtol):
    """Prints the side-by-side table; returns the problems found."""
    steps_one = [r for r in one if r["kind"] == "step"]
    steps_many = [r for r in many if r["kind"] == "step"]
    losses_one = {(r["epoch"], r["batch"]): r["loss"] for r in one if r["kind"] == "loss"}
    losses_many = {(r["epoch"], r["batch"]): r["loss"] for r in many if r["kind"] == "loss"}
    problems = []
    if not steps_one:
        problems.append("the 1-rank run logged no optimizer step (does the script train with a Keras optimizer?)")
    if len(steps_one) != len(steps_many):
        problems.append(f"{len(steps_one)} optimizer steps on 1 rank, {len(steps_many)} on {ranks}")
    print(f"{'step':>6} {'loss (1 rank)':>16} {f'loss ({ranks} ranks)':>16} {'max rel. diff':>14}")
    worst = 0.0
    noise = _rounding_level_variables(steps_one)
    loss_keys = sorted(losses_one)
    for index, (a, b) in enumerate(zip(steps_one, steps_many)):
        if len(a["norms"]) != len(b["norms"]):
            problems.append(f"step {index + 1}: {len(a['norms'])} variables on 1 rank, {len(b['norms'])} on {ranks}")
            continue
        diff = _norms_difference(a["norms"], b["norms"], noise)
        key = loss_keys[index] if index < len(loss_keys) else None
        la, lb = losses_one.get(key), losses_many.get(key)
        if la is not None and lb is not None:
            diff = max(diff, _relative(la, lb))
        worst = max(worst, diff)
        fmt = lambda v: f"{v:16.8g}" if v is not None else f"{'-':>16}"  # noqa: E731
        print(f"{index + 1:>6} {fmt(la)} {fmt(lb)} {diff:14.3e}")
    evaluations_one = [r["values"] for r in one if r["kind"] == "evaluate"]
    evaluations_many = [r["values"] for r in many if r["kind"] == "evaluate"]
    if len(evaluations_one) != len(evaluations_many):
        problems.append(f"{len(evaluations_one)} evaluate calls on 1 rank, {len(evaluations_many)} on {ranks}")
    for index, (a, b) in enumerate(zip(evaluations_one, evaluations_many)):
        diff = max((_relative(x, y) for x, y in zip(a, b)), default=0.0)
        worst = max(worst, diff)
        print(f"{'eval ' + str(index + 1):>6} {str(a):>16} {str(b):>16} {diff:14.3e}")
    print(f"# largest relative difference: {worst:.3e} (rtol {rtol:g}) over {len(steps_one)} steps"
          f" and {len(evaluations_one)} evaluate calls")
    if noise:
        print(f"# variable(s) {sorted(noise)} of {len(steps_one[0]['norms'])} stayed at rounding level in the 1-rank "
              f"run (norm below {_ROUNDING_LEVEL:g} of the largest at every step): compared against "
              f"{_NOISE_FLOOR:g} of the step's largest norm")
    if worst > rtol:
        problems.append(f"largest relative difference {worst:.3e} exceeds --rtol {rtol:g}")
    return problems


def main(argv=None):
    options = _parse(sys.argv[1:] if argv is None else argv)
    work = tempfile.mkdtemp(prefix="matex-verify-")
    failed = False
    try:
        one = _run(options, 1, os.path.join(work, "one.jsonl"), None)
        for index, (ranks, layout) in enumerate(options.runs):
            many = _run(options, ranks, os.path.join(work, f"many{index}.jsonl"), layout)
            problems = _compare(one, many, ranks, options.rtol)
            for problem in problems:
                print(f"FAIL: {problem}")
            if not problems:
                where = f" on virtual nodes {layout}" if layout else ""
                print(f"PASS: {ranks} ranks{where} follow the 1-rank run", flush=True)
            failed = failed or bool(problems)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
