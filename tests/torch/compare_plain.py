"""compare_plain.py --mpirun MPIRUN -np N [--noise] [--rtol R] SCRIPT: runs
SCRIPT plainly (one process, no matex: MATEX_ENABLE unset) and with
MATEX_ENABLE=1 under mpirun on N ranks, reads the "step K loss X" lines both
print, and fails unless the two curves agree and the distributed run said it
ran on matex.

--noise runs the plain script a second time with other rounding (ATen's
scalar kernels instead of its vector ones, and MKL's compatible code path:
the same arithmetic in another order). A step's loss agrees when its relative
difference is at most --rtol (1e-5), or at most the largest difference that
rounding alone made between the two plain runs up to that step: the noise
reference tells a rounding difference from a bug, and the table shows both."""
import argparse
import math
import os
import re
import subprocess
import sys

LINE = re.compile(r"^step (\d+) loss (\S+)$", re.M)
# The plain run again, with other rounding: every kernel computes the same
# function, with its sums taken in another order.
OTHER_ROUNDING = {"ATEN_CPU_CAPABILITY": "default", "MKL_CBWR": "COMPATIBLE"}


def run(command, env):
    result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    if result.returncode != 0:
        sys.exit(f"FAIL: {' '.join(command)} exited with {result.returncode}\n{result.stdout}\n{result.stderr}")
    return result


def losses(result):
    return [(int(s), float(v)) for s, v in LINE.findall(result.stdout)]


def relative(x, y):
    if not (math.isfinite(x) and math.isfinite(y)):
        return 0.0 if x == y else math.inf
    return abs(x - y) / max(abs(x), 1e-30)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--mpirun", default="mpirun")
    parser.add_argument("-np", type=int, default=2)
    parser.add_argument("--noise", action="store_true", help="also run the plain script with other rounding")
    parser.add_argument("--rtol", type=float, default=1e-5)
    parser.add_argument("script")
    args = parser.parse_args()
    base = {k: v for k, v in os.environ.items()
            if k not in ("MATEX_ENABLE", "RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "LOCAL_RANK")
            and k not in OTHER_ROUNDING}
    plain = losses(run([sys.executable, args.script], base))
    noise = losses(run([sys.executable, args.script], dict(base, **OTHER_ROUNDING))) if args.noise else None
    enabled = dict(base, MATEX_ENABLE="1")
    distributed = run([args.mpirun, "-np", str(args.np), "--oversubscribe", "--bind-to", "none", sys.executable,
                       args.script], enabled)
    if "runs as 'cpu:matex" not in distributed.stderr:
        sys.exit(f"FAIL: the MATEX_ENABLE=1 run did not report the takeover of gloo\n{distributed.stderr}")
    matex = losses(distributed)
    steps = [s for s, _ in plain]
    if not plain or steps != [s for s, _ in matex]:
        sys.exit(f"FAIL: the runs printed different steps\nplain: {plain}\nmatex: {matex}")
    if noise is not None and steps != [s for s, _ in noise]:
        sys.exit(f"FAIL: the plain run with other rounding printed other steps, so it is no noise reference "
                 f"(is the script nondeterministic?)\nplain: {plain}\nnoise: {noise}")

    worst = worst_noise = 0.0
    rounding_only = []
    print(f"{'step':>4}  {'plain':>12}  {f'matex -np {args.np}':>14}  {'rel':>8}" + (f"  {'noise':>8}" if noise else ""))
    for index, ((step, x), (_, y)) in enumerate(zip(plain, matex)):
        rel = relative(x, y)
        worst = max(worst, rel)
        if noise is not None:
            worst_noise = max(worst_noise, relative(x, noise[index][1]))
        print(f"{step:4d}  {x:12.9g}  {y:14.9g}  {rel:8.2e}" + (f"  {worst_noise:8.2e}" if noise else ""))
        if rel <= args.rtol:
            continue
        if noise is not None and rel <= worst_noise:
            rounding_only.append(step)
            continue
        sys.exit(f"FAIL: step {step} differs by {rel:.2e}, more than --rtol {args.rtol:g}"
                 + (f" and than the rounding noise {worst_noise:.2e}" if noise is not None else ""))
    summary = f"PASS: {len(plain)} steps equal to rtol {args.rtol:g} (worst {worst:.2e})"
    if noise is not None:
        summary += f"; rounding alone moved the plain curve by up to {worst_noise:.2e}"
        if rounding_only:
            summary += f"; steps {rounding_only} differ by more than rtol, but no more than rounding does"
        if worst_noise == 0.0:
            summary += " (the other rounding changed nothing here: the noise reference is silent)"
    print(summary)


if __name__ == "__main__":
    main()
