"""python -m matex.verify -np N [--virtual-nodes 2,2] [--rtol 1e-4] script.py [args...]

Runs an unmodified TensorFlow script with MATEX_ENABLE=1 on 1 rank and on N
ranks (under mpirun), collects what the activation logs on rank 0 per
optimizer step (MATEX_VERIFY_LOG: the L2 norm of every variable the optimizer
updated, and fit's loss per batch), prints the two runs side by side with the
largest relative difference, and exits non-zero when that difference exceeds
--rtol or the runs took different numbers of steps.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile


def _parse(argv):
    parser = argparse.ArgumentParser(prog="python -m matex.verify", description=__doc__.split("\n\n")[1])
    parser.add_argument("-np", dest="ranks", type=int, required=True, help="ranks of the distributed run (>= 2)")
    parser.add_argument("--virtual-nodes", default=None, help="MATEX_VIRTUAL_NODES of the distributed run, e.g. 2,2")
    parser.add_argument("--rtol", type=float, default=1e-4, help="largest relative difference allowed (1e-4)")
    parser.add_argument("--mpirun", default=None, help="the launcher (default: MATEX_MPIRUN, mpirun)")
    parser.add_argument("script")
    parser.add_argument("args", nargs=argparse.REMAINDER)
    options = parser.parse_args(argv)
    if options.mpirun is None:
        from . import _runtime
        options.mpirun = _runtime.config("MATEX_MPIRUN")
    if options.ranks < 2:
        parser.error("-np must be at least 2 (the reference run has 1 rank)")
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
    done = subprocess.run(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if done.returncode != 0:
        sys.stdout.write(done.stdout[-4000:])
        sys.exit(f"matex.verify: the {ranks}-rank run failed (exit status {done.returncode})")
    records = []
    if os.path.exists(log):
        with open(log) as lines:
            records = [json.loads(line) for line in lines if line.strip()]
    return records


def _relative(a, b):
    scale = max(abs(a), abs(b))
    return 0.0 if scale == 0 else abs(a - b) / scale


def main(argv=None):
    options = _parse(sys.argv[1:] if argv is None else argv)
    work = tempfile.mkdtemp(prefix="matex-verify-")
    try:
        one = _run(options, 1, os.path.join(work, "one.jsonl"), None)
        many = _run(options, options.ranks, os.path.join(work, "many.jsonl"), options.virtual_nodes)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    steps_one = [r for r in one if r["kind"] == "step"]
    steps_many = [r for r in many if r["kind"] == "step"]
    losses_one = {(r["epoch"], r["batch"]): r["loss"] for r in one if r["kind"] == "loss"}
    losses_many = {(r["epoch"], r["batch"]): r["loss"] for r in many if r["kind"] == "loss"}
    problems = []
    if not steps_one:
        problems.append("the 1-rank run logged no optimizer step (does the script train with a Keras optimizer?)")
    if len(steps_one) != len(steps_many):
        problems.append(f"{len(steps_one)} optimizer steps on 1 rank, {len(steps_many)} on {options.ranks}")
    print(f"{'step':>6} {'loss (1 rank)':>16} {f'loss ({options.ranks} ranks)':>16} {'max rel. diff':>14}")
    worst = 0.0
    loss_keys = sorted(losses_one)
    for index, (a, b) in enumerate(zip(steps_one, steps_many)):
        if len(a["norms"]) != len(b["norms"]):
            problems.append(f"step {index + 1}: {len(a['norms'])} variables on 1 rank, {len(b['norms'])} on many")
            continue
        diff = max((_relative(x, y) for x, y in zip(a["norms"], b["norms"])), default=0.0)
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
        problems.append(f"{len(evaluations_one)} evaluate calls on 1 rank, {len(evaluations_many)} on many")
    for index, (a, b) in enumerate(zip(evaluations_one, evaluations_many)):
        diff = max((_relative(x, y) for x, y in zip(a, b)), default=0.0)
        worst = max(worst, diff)
        print(f"{'eval ' + str(index + 1):>6} {str(a):>16} {str(b):>16} {diff:14.3e}")
    print(f"# largest relative difference: {worst:.3e} (rtol {options.rtol:g}) over {len(steps_one)} steps"
          f" and {len(evaluations_one)} evaluate calls")
    if worst > options.rtol:
        problems.append(f"largest relative difference {worst:.3e} exceeds --rtol {options.rtol:g}")
    for problem in problems:
        print(f"FAIL: {problem}")
    if not problems:
        print(f"PASS: {options.ranks} ranks follow the 1-rank run")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
