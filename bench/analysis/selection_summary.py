#!/usr/bin/env python3
"""selection_summary.py OUTDIR - the tables of bench/scripts/selection_check.sh.

Reads the matex-bench --compare all documents (LAYOUT.MODE.json). Per layout,
mode and placement, per size: auto's time and algorithm, the fastest forced
algorithm, MPI's time, and auto over the fastest of forced and MPI ("over
10 %" where it is more than 1.10). All times come from one run, interleaved
call by call. The heading gives the run's latency between ranks 0 and 1: on a
shared machine it tells runs whose cores sat far apart (docs/benchmarks.md).

The noise reference: auto against the forced run of the algorithm auto
itself ran ("auto/same"). The two run the same code in the same run, so where
they are more than 10 % apart the run's noise alone did it; the closing lines
count those rows next to the rows within 10 % of the fastest.
"""
import sys

from selection_races import fastest_us, forced_times, own_spread, race_documents

worst_all = {}
counts = {}  # mode -> [rows, within 10 % of the fastest, rows with a same-algorithm figure, those over 10 % apart]
for name, document in race_documents(sys.argv[1]):
    mode = name.split(".", 1)[1]
    for inplace in (False, True):
        latency = document.get("rank_latency_us")
        print(f"\n## {name}, {'in place' if inplace else 'out of place'}"
              + (f" (latency rank 0 <-> 1: {latency:.2f} us)" if latency is not None else ""))
        print(f"{'bytes':>10} {'auto us':>10} {'auto algo':>14} {'fastest forced':>26} {'MPI us':>10} "
              f"{'auto/fastest':>12} {'MPI/auto':>8} {'auto/same':>9}")
        for row in document["results"]:
            if row["inplace"] != inplace:
                continue
            forced = forced_times(row)
            best_name = min(forced, key=forced.get)
            ratio = row["time_us"] / fastest_us(row)
            worst_all[mode] = max(worst_all.get(mode, 0.0), ratio)
            tally = counts.setdefault(mode, [0, 0, 0, 0])
            tally[0] += 1
            tally[1] += ratio <= 1.10
            apart = own_spread(row)
            same_text = "-"
            if apart is not None:
                tally[2] += 1
                tally[3] += apart > 1.10
                same_text = f"{row['time_us'] / forced[row['algo']]:.2f}"
            print(f"{row['size']:>10} {row['time_us']:10.1f} {row['algo']:>14} {best_name:>15} {forced[best_name]:10.1f} "
                  f"{row['mpi_time_us']:10.1f} {ratio:12.2f} {row['mpi_time_us'] / row['time_us']:7.2f}x {same_text:>9}"
                  f"{'' if ratio <= 1.10 else '  (over 10 %)'}")
for mode, worst in sorted(worst_all.items()):
    rows, within, compared, apart = counts[mode]
    print(f"# MATEX_CALIBRATE={mode}: worst auto / fastest {worst:.2f}; within 10 % of the fastest in {within} of "
          f"{rows} rows; noise reference: auto and its own algorithm forced more than 10 % apart in {apart} of "
          f"{compared}")
