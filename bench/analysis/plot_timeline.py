#!/usr/bin/env python3
"""Renders a MATEX_TIMELINE Chrome trace as a PNG: one row per tensor, one
coloured bar per event (queue, negotiate, pack, allreduce, broadcast, unpack),
and thin bars inside each collective for its algorithm's phases.
For a quick look without a browser; chrome://tracing or Perfetto show the same
file interactively.

usage: bench/analysis/plot_timeline.py TRACE.json -o OUT.png [--rows N]
"""
import argparse
import json

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

COLOURS = {"queue": "#bbbbbb", "negotiate": "#f2a541", "pack": "#6baed6", "allreduce": "#2171b5",
           "broadcast": "#41ab5d", "allgather": "#807dba", "unpack": "#9ecae1"}
# The algorithm's phases, drawn as thin bars inside their collective.
PHASES = {"copy-in": "#fdae6b", "reduce": "#d62728", "rail": "#8c564b", "copy-out": "#74c476",
          "wait": "#ffffff"}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trace")
    parser.add_argument("-o", "--output", required=True)
    parser.add_argument("--rows", type=int, default=40, help="show the first N tensors to start")
    args = parser.parse_args()
    with open(args.trace) as f:
        events = json.load(f)
    names = {e["tid"]: e["args"]["name"] for e in events if e.get("ph") == "M"}
    spans = [e for e in events if e.get("ph") == "X"]
    first = {}
    for e in spans:
        first[e["tid"]] = min(first.get(e["tid"], e["ts"]), e["ts"])
    rows = sorted(first, key=first.get)[: args.rows]
    index = {tid: i for i, tid in enumerate(rows)}
    t0 = min(first[t] for t in rows)
    fig, ax = plt.subplots(figsize=(11, 0.22 * len(rows) + 1.5))
    for e in spans:
        if e["tid"] not in index:
            continue
        phase = e["name"] in PHASES
        ax.barh(index[e["tid"]], e["dur"] / 1000.0, left=(e["ts"] - t0) / 1000.0, height=0.3 if phase else 0.7,
                color=PHASES.get(e["name"], COLOURS.get(e["name"], "black")), label=e["name"])
    handles, labels = ax.get_legend_handles_labels()
    unique = dict(zip(labels, handles))
    ax.legend(unique.values(), unique.keys(), loc="upper right", fontsize=8)
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([names.get(t, str(t)) for t in rows], fontsize=6)
    ax.invert_yaxis()
    ax.set_xlabel("ms since the first event shown")
    ax.set_title("matexcomm engine timeline (first %d tensors)" % len(rows))
    fig.tight_layout()
    fig.savefig(args.output, dpi=110)
    print("wrote", args.output)


if __name__ == "__main__":
    main()
