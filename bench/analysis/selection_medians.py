#!/usr/bin/env python3
"""selection_medians.py OUTDIR OUTDIR [OUTDIR ...] - several races of
bench/scripts/selection_check.sh read together.

One race on a shared machine is noisy: auto and the very algorithm it ran,
forced in the same run, often differ by more than 10 %
(bench/analysis/selection_summary.py, "auto/same"). This reads two or more races and
prints, per layout, mode, placement and size:
  - the median over the races of auto over the fastest (of every forced
    algorithm and MPI);
  - the median of auto's own spread: max(auto/same, same/auto), where auto
    ran one algorithm in that race;
  - "miss" where the median ratio is over 1.10 and also over the median
    spread: slower than the fastest by more than the run's noise.
The closing lines count, per mode, the rows whose median is within 10 %, and
the misses by that rule.
"""
import statistics
import sys

from selection_races import fastest_us, own_spread, race_documents


def race_rows(out):
    """{(name, inplace, size): (auto / fastest, spread or None, auto's algorithm)} of one race."""
    return {(name, row["inplace"], row["size"]): (row["time_us"] / fastest_us(row), own_spread(row), row["algo"])
            for name, document in race_documents(out) for row in document["results"]}


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    races = [race_rows(out) for out in sys.argv[1:]]
    keys = sorted(set.intersection(*(set(race) for race in races)))
    if not keys:
        sys.exit("selection_medians.py: the races have no row in common")
    counts = {}  # mode -> [rows, median within 10 %, misses beyond the noise]
    current = None
    for name, inplace, size in keys:
        if (name, inplace) != current:
            current = (name, inplace)
            print(f"\n## {name}, {'in place' if inplace else 'out of place'}, {len(races)} races")
            print(f"{'bytes':>10} {'auto/fastest':>12} {'spread':>7} {'each race':>24}  auto's algorithms")
        cells = [race[(name, inplace, size)] for race in races]
        ratio = statistics.median(cell[0] for cell in cells)
        spreads = [cell[1] for cell in cells if cell[1] is not None]
        spread = statistics.median(spreads) if spreads else 1.0
        miss = ratio > 1.10 and ratio > spread
        tally = counts.setdefault(name.split(".", 1)[1], [0, 0, 0])
        tally[0] += 1
        tally[1] += ratio <= 1.10
        tally[2] += miss
        each = " ".join(f"{cell[0]:.2f}" for cell in cells)
        algorithms = ", ".join(sorted({cell[2] for cell in cells}))
        print(f"{size:>10} {ratio:12.2f} {spread:7.2f} {each:>24}  {algorithms}{'  (miss)' if miss else ''}")
    for mode, (rows, within, misses) in sorted(counts.items()):
        print(f"# MATEX_CALIBRATE={mode}: median within 10 % of the fastest in {within} of {rows} rows; "
              f"slower than the fastest by more than 10 % and more than auto's own spread in {misses}")


if __name__ == "__main__":
    main()
