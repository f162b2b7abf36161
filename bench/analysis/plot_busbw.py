#!/usr/bin/env python3
"""plot_busbw.py - bus bandwidth vs message size from matex-bench JSON files.

    python3 bench/analysis/plot_busbw.py -o busbw.png run1.json [run2.json ...]

Draws one line for libmatexcomm and, when the runs used --compare mpi, one for
plain MPI. Several files (repeated runs of the same command) are drawn as the
median with a min..max band. The records shown are selected by --type, --op
and --inplace (default: float32 sum out-of-place; broadcast, which only has
in-place records, and the collectives without an op fall back automatically).
"""
import argparse
import json
import statistics
import sys


def load_runs(paths):
    runs = []
    for path in paths:
        try:
            with open(path) as handle:
                runs.append(json.load(handle))
        except (OSError, json.JSONDecodeError) as error:
            sys.exit(f"plot_busbw.py: {path}: {error}")
    return runs


def select(records, dtype, op, inplace):
    """Records of one dtype/op/placement, with the fallbacks described above."""
    ops = {r["redop"] for r in records}
    if op not in ops and "none" in ops:
        op = "none"
    placements = {r["inplace"] for r in records if r["type"] == dtype and r["redop"] == op}
    if inplace not in placements and placements:
        inplace = placements.pop()
    chosen = [r for r in records if r["type"] == dtype and r["redop"] == op and r["inplace"] == inplace]
    return chosen, op, inplace


def series(runs, key, dtype, op, inplace):
    """size -> list of values over runs (one per run that has the size)."""
    by_size = {}
    for run in runs:
        records, _, _ = select(run["results"], dtype, op, inplace)
        for record in records:
            value = record.get(key)
            if value is not None:
                by_size.setdefault(record["size"], []).append(value)
    return dict(sorted(by_size.items()))


def size_label(size):
    for unit, shift in (("G", 30), ("M", 20), ("K", 10)):
        if size >= 1 << shift and size % (1 << shift) == 0:
            return f"{size >> shift}{unit}"
    return f"{size}"


def draw(axes, data, label, color):
    sizes = list(data)
    if not sizes:
        return
    medians = [statistics.median(data[s]) for s in sizes]
    axes.plot(sizes, medians, marker="o", markersize=3, color=color, label=label)
    if any(len(v) > 1 for v in data.values()):
        axes.fill_between(sizes, [min(data[s]) for s in sizes], [max(data[s]) for s in sizes], color=color, alpha=0.2)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="+", help="matex-bench -J output files")
    parser.add_argument("-o", "--output", required=True, help="PNG file to write")
    parser.add_argument("--type", default="float32", help="dtype to plot (default float32)")
    parser.add_argument("--op", default="sum", help="reduction to plot (default sum)")
    parser.add_argument("--inplace", action="store_true", help="plot the in-place records")
    args = parser.parse_args()

    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        sys.exit("plot_busbw.py needs matplotlib: pip install matplotlib")

    runs = load_runs(args.files)
    first = runs[0]
    _, op, inplace = select(first["results"], args.type, args.op, args.inplace)
    ours = series(runs, "busbw", args.type, op, inplace)
    mpi = series(runs, "mpi_busbw", args.type, op, inplace)
    if not ours:
        sys.exit(f"plot_busbw.py: no {args.type}/{op} records in {', '.join(args.files)}")

    figure, axes = plt.subplots(figsize=(9, 5.5))
    draw(axes, ours, f"libmatexcomm ({first.get('algo_requested', 'auto')})", "tab:blue")
    draw(axes, mpi, "MPI", "tab:orange")
    axes.set_xscale("log", base=2)
    sizes = list(ours)
    axes.set_xticks(sizes)
    axes.set_xticklabels([size_label(s) for s in sizes], rotation=45)
    axes.set_xlabel("size (bytes)")
    axes.set_ylabel("busbw (GB/s)")
    axes.grid(True, which="both", alpha=0.3)
    placement = "in-place" if inplace else "out-of-place"
    band = f"; median of {len(runs)} runs, min..max band" if len(runs) > 1 else ""
    ranks, nodes = first["world_size"], first["node_count"]
    what = " ".join(part for part in (first["coll"], args.type, op if op != "none" else "", placement) if part)
    axes.set_title(f"{what}: {ranks} rank{'s' if ranks != 1 else ''} on {nodes} node{'s' if nodes != 1 else ''} "
                   f"(local sizes {first.get('layout', '?')}){band}\n"
                   f"memcpy (1 core) {first['memcpy_gbps']:.1f} GB/s")
    axes.legend()
    figure.tight_layout()
    figure.savefig(args.output, dpi=120)
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
