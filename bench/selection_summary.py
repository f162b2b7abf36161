#!/usr/bin/env python3
"""selection_summary.py OUTDIR - the tables of bench/selection_check.sh.

Per layout and placement, per size: auto's time and algorithm, the fastest
forced algorithm, MPI's time, and auto over the best of forced and MPI
("ok" within 10 %).
"""
import collections
import json
import pathlib
import sys

out = pathlib.Path(sys.argv[1])
runs = collections.defaultdict(dict)  # layout -> choice -> records
for path in sorted(out.glob("*.json")):
    if path.name.endswith(".tuning.json"):
        continue
    layout, choice = path.name[:-len(".json")].split(".", 1)
    runs[layout][choice] = json.loads(path.read_text())["results"]


def by_size(records, inplace):
    return {r["size"]: r for r in records if r["inplace"] == inplace}


worst_all = 0.0
for layout, choices in runs.items():
    if "auto" not in choices:
        continue
    for inplace in (False, True):
        auto = by_size(choices["auto"], inplace)
        print(f"\n## {layout}, {'in place' if inplace else 'out of place'}")
        print(f"{'bytes':>10} {'auto us':>10} {'auto algo':>22} {'best forced':>24} {'MPI us':>10} "
              f"{'auto/best':>9} {'vs MPI':>7}")
        for size, row in sorted(auto.items()):
            forced = {c: by_size(r, inplace).get(size) for c, r in choices.items() if c != "auto"}
            forced = {c: r["time_us"] for c, r in forced.items() if r and r.get("time_us")}
            best_name = min(forced, key=forced.get)
            best = min(forced[best_name], row["mpi_time_us"])
            ratio = row["time_us"] / best
            worst_all = max(worst_all, ratio)
            print(f"{size:>10} {row['time_us']:10.1f} {row['algo']:>22} {best_name:>13} {forced[best_name]:10.1f} "
                  f"{row['mpi_time_us']:10.1f} {ratio:9.2f} {row['mpi_time_us'] / row['time_us']:6.2f}x"
                  f"{'' if ratio <= 1.10 else '  (over 10 %)'}")
print(f"\n# worst auto / best: {worst_all:.2f}")
