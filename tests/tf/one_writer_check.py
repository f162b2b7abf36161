#!/usr/bin/env python3
"""one_writer_check.py - checks the logs of the write tracer
(tests/tf/write_tracer, libmatex_write_tracer.so) for writes by MPI ranks other
than 0: under MATEX_ENABLE=1, rank 0 alone writes model files, checkpoints,
CSV logs and TensorBoard event files.

    python one_writer_check.py TRACE_DIR [--under PREFIX] [--expect-writes] [--strict]

TRACE_DIR holds the tracer's writes.<pid>.log files (MATEX_WRITE_TRACE_DIR of
the traced run); each line reads  rank TAB pid TAB call TAB path [TAB path2].
Only calls with a path under PREFIX count (all when --under is not given).
Fails (exit status 1) when a rank other than 0 wrote; with --expect-writes
also when rank 0 wrote nothing (so that the check cannot pass vacuously); with
--strict also when a process started outside mpirun (rank "-") wrote. Plain
Python 3, no TensorFlow.
"""
import argparse
import glob
import os
import sys

SHOWN_LINES = 20
SHOWN_PATHS = 10


class Write:
    """One logged call: rank ("-" outside mpirun), pid, call and its paths."""

    def __init__(self, source, rank, pid, call, paths):
        self.source, self.rank, self.pid, self.call, self.paths = source, rank, pid, call, paths

    def __str__(self):
        return "\t".join([self.rank, self.pid, self.call] + self.paths) + f"   ({self.source})"


def unescape(field):
    """Undoes the tracer's escapes: \\t, \\n and \\\\."""
    out, chars = [], iter(field)
    for c in chars:
        if c == "\\":
            nxt = next(chars, "")
            out.append({"t": "\t", "n": "\n"}.get(nxt, nxt))
        else:
            out.append(c)
    return "".join(out)


def read_logs(trace_dir):
    """The calls in every writes.*.log, and the lines that are not calls."""
    writes, malformed = [], []
    for log in sorted(glob.glob(os.path.join(trace_dir, "writes.*.log"))):
        with open(log, encoding="utf-8", errors="replace") as f:
            for number, line in enumerate(f, 1):
                fields = line.rstrip("\n").split("\t")
                source = f"{os.path.basename(log)}:{number}"
                if len(fields) in (4, 5) and fields[2]:
                    writes.append(Write(source, fields[0], fields[1], fields[2],
                                        [unescape(p) for p in fields[3:]]))
                elif line.strip():
                    malformed.append(f"{source}: {line.rstrip()}")
    return writes, malformed


def prefixes(under):
    """PREFIX as given made absolute, and with symlinks resolved (a trailing / kept)."""
    if under is None:
        return None
    slash = "/" if under.endswith("/") and len(under) > 1 else ""
    forms = {os.path.abspath(under), os.path.realpath(under)}
    return tuple(form.rstrip("/") + slash if form != "/" else "/" for form in forms)


def is_under(write, allowed):
    return allowed is None or any(path.startswith(allowed) for path in write.paths)


def unique_paths(writes, limit=SHOWN_PATHS):
    seen = []
    for write in writes:
        for path in write.paths:
            if path not in seen:
                seen.append(path)
    return seen[:limit], len(seen)


def report(title, writes):
    """Prints up to SHOWN_LINES of writes and their count."""
    print(f"{title}: {len(writes)} call(s)")
    for write in writes[:SHOWN_LINES]:
        print(f"  {write}")
    if len(writes) > SHOWN_LINES:
        print(f"  ... and {len(writes) - SHOWN_LINES} more")


def print_paths(title, writes):
    shown, total = unique_paths(writes)
    print(f"{title}: {total} unique path(s){', the first ' + str(len(shown)) if total > len(shown) else ''}")
    for path in shown:
        print(f"  {path}")


def check(trace_dir, under, expect_writes, strict):
    """Prints the summary and the failures; returns the exit status."""
    if not os.path.isdir(trace_dir):
        print(f"FAIL: no trace directory {trace_dir}")
        return 1
    writes, malformed = read_logs(trace_dir)
    logs = len(glob.glob(os.path.join(trace_dir, "writes.*.log")))
    allowed = prefixes(under)
    selected = [w for w in writes if is_under(w, allowed)]
    rank0 = [w for w in selected if w.rank == "0"]
    unranked = [w for w in selected if w.rank == "-"]
    others = [w for w in selected if w.rank not in ("0", "-")]

    scope = f"under {' or '.join(sorted(set(allowed)))}" if allowed else "anywhere"
    print(f"{logs} log file(s), {len(writes)} logged call(s), {len(selected)} {scope}")
    print(f"write calls by rank 0: {len(rank0)}; by other ranks: {len(others)}; outside mpirun (rank -): {len(unranked)}")
    print_paths("paths written by rank 0", rank0)
    for line in malformed[:SHOWN_LINES]:
        print(f"warning: not a trace line: {line}")

    failures = []
    if others:
        ranks = sorted({w.rank for w in others}, key=lambda r: (len(r), r))
        report(f"FAIL: ranks other than 0 wrote (rank(s) {', '.join(ranks)})", others)
        print_paths("paths written by other ranks", others)
        failures.append(f"{len(others)} write call(s) by ranks other than 0")
    if strict and unranked:
        report("FAIL (--strict): processes outside mpirun (rank -) wrote", unranked)
        failures.append(f"{len(unranked)} write call(s) outside mpirun")
    if expect_writes and not rank0:
        print(f"FAIL (--expect-writes): rank 0 wrote nothing {scope}")
        failures.append("no write by rank 0")
    if failures:
        print("FAIL: " + "; ".join(failures))
        return 1
    print(f"PASS: only rank 0 wrote {scope}")
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("trace_dir", metavar="TRACE_DIR", help="the tracer's MATEX_WRITE_TRACE_DIR")
    parser.add_argument("--under", metavar="PREFIX", help="only calls on paths that start with PREFIX count")
    parser.add_argument("--expect-writes", action="store_true", help="fail when rank 0 wrote nothing")
    parser.add_argument("--strict", action="store_true", help="fail on writes from outside mpirun (rank -) too")
    args = parser.parse_args()
    return check(args.trace_dir, args.under, args.expect_writes, args.strict)


if __name__ == "__main__":
    sys.exit(main())
