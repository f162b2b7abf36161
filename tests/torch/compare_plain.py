"""compare_plain.py --mpirun MPIRUN -np N SCRIPT: runs SCRIPT plainly (one
process, no matex: MATEX_ENABLE unset) and with MATEX_ENABLE=1 under mpirun
on N ranks, reads the "step K loss X" lines both print, and fails unless the
two curves agree at rtol 1e-5 and the distributed run said it ran on matex."""
import argparse
import math
import os
import re
import subprocess
import sys

LINE = re.compile(r"^step (\d+) loss (\S+)$", re.M)


def run(command, env):
    result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    if result.returncode != 0:
        sys.exit(f"FAIL: {' '.join(command)} exited with {result.returncode}\n{result.stdout}\n{result.stderr}")
    return result


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--mpirun", default="mpirun")
    parser.add_argument("-np", type=int, default=2)
    parser.add_argument("script")
    args = parser.parse_args()
    base = {k: v for k, v in os.environ.items()
            if k not in ("MATEX_ENABLE", "RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "LOCAL_RANK")}
    plain = run([sys.executable, args.script], base)
    enabled = dict(base, MATEX_ENABLE="1")
    distributed = run([args.mpirun, "-np", str(args.np), "--oversubscribe", "--bind-to", "none", sys.executable,
                       args.script], enabled)
    if "runs as 'cpu:matex" not in distributed.stderr:
        sys.exit(f"FAIL: the MATEX_ENABLE=1 run did not report the takeover of gloo\n{distributed.stderr}")
    a = [(int(s), float(v)) for s, v in LINE.findall(plain.stdout)]
    b = [(int(s), float(v)) for s, v in LINE.findall(distributed.stdout)]
    if not a or [s for s, _ in a] != [s for s, _ in b]:
        sys.exit(f"FAIL: the runs printed different steps\nplain: {a}\nmatex: {b}")
    worst = 0.0
    for (step, x), (_, y) in zip(a, b):
        rel = abs(x - y) / max(abs(x), 1e-30)
        worst = max(worst, rel)
        print(f"step {step:3d}  plain {x:.9g}  matex -np {args.np} {y:.9g}  rel {rel:.2e}")
        if not math.isfinite(y) or rel > 1e-5:
            sys.exit(f"FAIL: step {step} differs by {rel:.2e} (> 1e-5)")
    print(f"PASS: {len(a)} steps equal to rtol 1e-5 (worst {worst:.2e})")


if __name__ == "__main__":
    main()
