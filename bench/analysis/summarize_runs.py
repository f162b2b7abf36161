#!/usr/bin/env python3
"""summarize_runs.py - a Markdown table of repeated matex-bench runs.

    python3 bench/analysis/summarize_runs.py run1.json run2.json run3.json

One row per message size: the median over the runs of our time and busbw,
MPI's time (needs --compare mpi) and the speedup, out-of-place and in-place,
plus every run's speedup so the spread is visible.
"""
import json
import statistics
import sys


def main(paths):
    runs = [json.load(open(path)) for path in paths]
    rows = {}
    for run in runs:
        for record in run["results"]:
            rows.setdefault((record["size"], record["inplace"]), []).append(record)
    memcpy = statistics.median(run["memcpy_gbps"] for run in runs)
    print(f"memcpy line (1 core), median of {len(runs)} runs: {memcpy:.2f} GB/s\n")
    print("| size (B) | placement | time (us) | busbw (GB/s) | busbw / memcpy | MPI time (us) | speedup (median) "
          "| speedups of the runs | algo |")
    print("|---:|---|---:|---:|---:|---:|---:|---|---|")
    for (size, inplace), records in sorted(rows.items()):
        time = statistics.median(r["time_us"] for r in records)
        busbw = statistics.median(r["busbw"] for r in records)
        mpi = [r["mpi_time_us"] for r in records if "mpi_time_us" in r]
        speedups = [r["speedup"] for r in records if "speedup" in r]
        algos = sorted({r["algo"] for r in records})
        print(f"| {size} | {'in-place' if inplace else 'out-of-place'} | {time:.1f} | {busbw:.2f} | "
              f"{busbw / memcpy:.2f} | {statistics.median(mpi):.1f} | {statistics.median(speedups):.2f} | "
              f"{', '.join(f'{s:.2f}' for s in speedups)} | {', '.join(algos)} |")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
