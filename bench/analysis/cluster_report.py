#!/usr/bin/env python3
"""cluster_report.py - tables and a plot from bench/scripts/cluster_bench.sh's runs across testbed hosts.

    python3 bench/analysis/cluster_report.py DIR     (reads DIR/RATE.HOSTSxSLOTS.{mpi,all}.json)

Prints markdown tables: bandwidth against the link's rate (an allreduce across 2 hosts moves each
host's whole buffer over its link once, so algbw cannot exceed the link's rate), auto against MPI,
and auto against the fastest forced algorithm (--compare all). Writes DIR/busbw_by_link.png when
matplotlib is installed: busbw against size, float32 sum out of place, one line per link rate.
"""
import glob
import json
import os
import re
import sys

from selection_races import forced_times, own_spread

NAME = re.compile(r"(\d+)gbit\.(\d+)x(\d+)\.(mpi|all)\.json$")
WITHIN = 1.10


def records(document):
    for value in document.values():
        if isinstance(value, list) and value and isinstance(value[0], dict) and "size" in value[0]:
            return [r for r in value if r["type"] == "float32" and r["redop"] == "sum" and not r["inplace"]]
    return []


def human(size):
    for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= scale:
            return f"{size // scale} {unit}"
    return f"{size} B"


def load(directory):
    runs = {}
    for path in sorted(glob.glob(os.path.join(directory, "*.json"))):
        match = NAME.search(os.path.basename(path))
        if match:
            gbit, hosts, slots, compare = int(match[1]), int(match[2]), int(match[3]), match[4]
            with open(path) as handle:
                runs[(gbit, hosts, slots, compare)] = records(json.load(handle))
    return runs


def runs_of(runs, compare, *columns):
    """Prints a markdown table's head; yields (gbit, hosts, slots, rows) of the runs of one --compare."""
    print("| " + " | ".join(columns) + " |")
    print("|" + "---|" * len(columns))
    for (gbit, hosts, slots, kind), rows in sorted(runs.items()):
        if kind == compare:
            yield gbit, hosts, slots, rows


def link_table(runs):
    for gbit, hosts, slots, rows in runs_of(runs, "mpi", "link", "hosts x ranks", "size", "algbw GB/s", "of link",
                                            "busbw GB/s", "MPI busbw", "auto/MPI speed-up", "algo"):
        link = gbit / 8
        for row in rows:
            if row["size"] in (1 << 20, 16 << 20, 64 << 20):
                print(f"| {gbit} Gbit/s | {hosts} x {slots} | {human(row['size'])} | {row['algbw']:.3f} | "
                      f"{100 * row['algbw'] / link:.0f} % | {row['busbw']:.3f} | {row['mpi_busbw']:.3f} | "
                      f"{row['speedup']:.2f} | {row['algo']} |")


def race_table(runs):
    """auto against the fastest forced algorithm, with the noise reference of bench/analysis/selection_races.py (auto
    against the forced run of the algorithm it ran, same buffers, interleaved): an excess within it is noise."""
    for gbit, hosts, slots, rows in runs_of(runs, "all", "link", "hosts x ranks", "worst auto/fastest",
                                            "where (fastest)", "noise there", "sizes off by > 10 % (noise)",
                                            "auto/MPI range"):
        worst, where, noise, off, speedups = 0, "", None, [], []
        for row in rows:
            times = dict(forced_times(row), mpi=row["mpi_time_us"])
            fastest = min(times, key=times.get)
            ratio = row["time_us"] / times[fastest]
            spread = own_spread(row)
            if ratio > worst:
                worst, where, noise = ratio, f"{human(row['size'])} ({fastest})", spread
            if ratio > WITHIN:
                off.append(f"{human(row['size'])} {ratio:.2f} ({spread:.2f})" if spread else
                           f"{human(row['size'])} {ratio:.2f}")
            if row.get("mpi_time_us"):
                speedups.append(row["mpi_time_us"] / row["time_us"])
        span = f"{min(speedups):.2f}-{max(speedups):.2f}" if speedups else "-"
        print(f"| {gbit} Gbit/s | {hosts} x {slots} | {worst:.2f} | {where} | {noise or 0:.2f} | "
              f"{', '.join(off) or 'none'} | {span} |")


def plot(runs, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("(matplotlib is not installed: no plot)", file=sys.stderr)
        return
    figure, axis = plt.subplots(figsize=(8, 5))
    for (gbit, hosts, slots, compare), rows in sorted(runs.items()):
        if compare != "mpi" or slots != 1:
            continue
        sizes = [r["size"] for r in rows]
        line, = axis.plot(sizes, [r["busbw"] for r in rows], marker="o", label=f"matex, {gbit} Gbit/s")
        axis.plot(sizes, [r["mpi_busbw"] for r in rows], linestyle="--", color=line.get_color(),
                  label=f"Open MPI, {gbit} Gbit/s")
        axis.axhline(gbit / 8, color=line.get_color(), linestyle=":", linewidth=1)
    axis.set_xscale("log", base=2)
    axis.set_yscale("log")
    axis.set_xlabel("bytes per rank")
    axis.set_ylabel("busbw (GB/s)")
    axis.set_title("allreduce across 2 testbed hosts x 1 rank (dotted: the link's rate)")
    axis.legend(fontsize=8)
    axis.grid(True, which="both", linewidth=0.3)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    print(f"(plot: {path})", file=sys.stderr)


def main():
    directory = sys.argv[1] if len(sys.argv) > 1 else "."
    runs = load(directory)
    if not runs:
        sys.exit(f"cluster_report.py: no RATE.HOSTSxSLOTS.{{mpi,all}}.json in {directory}")
    link_table(runs)
    print()
    race_table(runs)
    plot(runs, os.path.join(directory, "busbw_by_link.png"))


if __name__ == "__main__":
    main()
