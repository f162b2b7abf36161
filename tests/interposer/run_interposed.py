#!/usr/bin/env python3
"""Runs an MPI program under libmatexcomm's interposer and checks the report.

usage: run_interposed.py --interposer LIB [--expect NAME=FRACTION ...]
                         [--expect-predefined NAME=FRACTION ...]
                         [--expect-reason NAME=REASON ...] -- LAUNCHER ARGS...

The launcher command (mpirun ...) runs with LD_PRELOAD=LIB passed to every
rank (-x, Open MPI) and MATEX_INTERPOSE_REPORT=1. The test fails when the
program fails, when the report is missing, when a collective named with
--expect has fewer than FRACTION of its calls served by libmatexcomm (and at
least one call), or when --expect-reason names a reason the collective's row
does not list. The output is echoed either way.
"""
import argparse
import os
import re
import subprocess
import sys

ROW = re.compile(r"^(MPI_\w+|MPI-4 \S+ forms)\s+(\d+)\s+(\d+)\s+([\d.]+ \w+)\s+(\d+)\s+([\d.]+ \w+)\s*(.*)$")


def parse_report(text):
    rows = {}
    if "matex interposer report" not in text:
        return None
    for line in text.splitlines():
        match = ROW.match(line.strip())
        if match:
            rows[match.group(1)] = {"calls": int(match.group(2)), "served": int(match.group(3)),
                                    "why": match.group(7)}
    return rows


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--interposer", required=True)
    parser.add_argument("--expect", action="append", default=[])
    parser.add_argument("--expect-reason", action="append", default=[])
    parser.add_argument("--expect-predefined", action="append", default=[],
                        help="NAME=FRACTION: as --expect, of the calls whose datatype is predefined (the row's "
                             "calls less those handed to MPI for 'datatype')")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    launcher, rest = command[0], command[1:]
    full = [launcher, "-x", "LD_PRELOAD=" + args.interposer, "-x", "MATEX_INTERPOSE_REPORT=1"] + rest
    env = dict(os.environ, MATEX_INTERPOSE_REPORT="1")
    result = subprocess.run(full, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, text=True)
    sys.stdout.write(result.stdout)
    failures = []
    if result.returncode != 0:
        failures.append(f"the program exited with status {result.returncode}")
    rows = parse_report(result.stdout)
    if rows is None:
        failures.append("no interposer report in the output")
        rows = {}
    checks = [(item, False) for item in args.expect] + [(item, True) for item in args.expect_predefined]
    for item, predefined_only in checks:
        name, fraction = item.split("=")
        row = rows.get(name)
        calls = row["calls"] if row else 0
        what = "calls"
        if row and predefined_only:
            derived = re.search(r"\bdatatype (\d+)", row["why"])
            calls -= int(derived.group(1)) if derived else 0
            what = "calls of predefined datatypes"
        if calls <= 0:
            failures.append(f"{name}: no {what} in the report")
        elif row["served"] < float(fraction) * calls:
            failures.append(f"{name}: {row['served']} of {calls} {what} served, expected at least {fraction}")
        else:
            print(f"check: {name}: {row['served']} of {calls} {what} served "
                  f"({100.0 * row['served'] / calls:.1f} %, at least {100 * float(fraction):.0f} % expected)")
    for item in args.expect_reason:
        name, reason = item.split("=")
        row = rows.get(name)
        if row is None or reason not in row["why"]:
            failures.append(f"{name}: expected calls handed to MPI for '{reason}', report row: {row}")
        else:
            print(f"check: {name}: handed to MPI for '{reason}' as expected")
    for failure in failures:
        print("FAIL: " + failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
