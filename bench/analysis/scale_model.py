#!/usr/bin/env python3
"""scale_model.py - predicted allreduce times from 1 to 4,096 nodes.

    python3 bench/analysis/scale_model.py --intra one_node.json [--network ndr|100gbe] [--nics K]
    python3 bench/analysis/scale_model.py --intra one_node.json --validate virtual_1_1.json \\
        --measured tune_2_2.json tune_1_1_1_1.json [--cores 2]
    python3 bench/analysis/scale_model.py --intra one_node.json --plot docs/scaling

The node is the one a tuning file (matex-tune, run on ONE node) measured: its
ranks per node q and each algorithm's time on that node. The network is a
profile: alpha (seconds per message), the bandwidth of one NIC, and NICs per
node. Every algorithm is the node part (measured) plus an inter-node part
(modelled), with N nodes, n bytes, p = N q ranks:

  flat      MPI's allreduce over all p ranks, not topology-aware: recursive
            doubling for small messages, Rabenseifner (reduce-scatter by
            halving, then allgather) for large ones, whichever is faster. The
            steps between nodes carry the q ranks' data at once through the
            node's NICs, so a node moves q times what a hierarchical one moves.
  rab       reduce to a leader, allreduce among the N leaders, broadcast:
            one rank per node drives one NIC.
  rs_ar_ag  reduce-scatter in the node, q concurrent rail allreduces of n/q
  (+_cma)   bytes (each in MATEX_SHM_CHUNK_BYTES pieces, as the library
            calls them), allgather in the node: all NICs busy.

An allreduce among N nodes of m bytes with per-rank bandwidth B costs
min(ceil(log2 N) (alpha + m / B), 2 ceil(log2 N) alpha + 2 (N-1)/N m / B).
The ResNet-50 table: its 161 gradients (bench/harness/resnet50_shapes.txt, 102 MB of
float32), fused into one allreduce per step, against a compute time per step
(--compute, default 0.3 s: a ResNet-class model at batch 64 per GPU on the
P100s of Horovod's paper). Efficiency = compute / (compute + allreduce), with
no overlap; "overlapped" hides the allreduce behind the backward pass
(two thirds of the compute), as Horovod and DDP do.

--validate takes the network from a tuning file measured in virtual nodes of
one rank each (layout 1,1: MPI between processes stands in for the NIC) and
sets the predictions for other virtual layouts against their own tuning
files. Where the ranks outnumber the cores (--cores), every predicted time is
scaled by ranks / cores over that of the calibration runs: in virtual nodes
the CPUs move the bytes that NICs would. The caches see the working set of
all of a host's ranks: a layout of R ranks at n bytes each is costed as the
calibration's C ranks measured at n R / C bytes (per byte, for the node part
and the link alike), so that 4 ranks leave the L3 where 2 ranks still fit.
"""
import argparse
import json
import math
import pathlib
import re
import sys

HERE = pathlib.Path(__file__).resolve().parent
KIB, MIB, GIB = 1 << 10, 1 << 20, 1 << 30
NODE_COUNTS = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096]
SIZES = [4 << (2 * i) for i in range(15)]  # 4 B .. 1 GiB by 4
ALGORITHMS = ["flat", "rab", "rs_ar_ag", "rs_ar_ag_cma"]


class Network:
    """host_per_byte: what a rank spends per byte it receives and reduces (0: inside nic_bandwidth)."""

    def __init__(self, name, alpha, nic_bandwidth, nics, host_per_byte=0.0):
        self.name, self.alpha, self.nic_bandwidth, self.nics = name, alpha, nic_bandwidth, nics
        self.host_per_byte = host_per_byte

    def on(self, node, nics=None):
        """This network with `node`'s ranks receiving and reducing the bytes."""
        return Network(self.name, self.alpha, self.nic_bandwidth, nics or self.nics, node.host_per_byte)

    def __str__(self):
        return (f"{self.name}: alpha {self.alpha * 1e6:g} us, {self.nic_bandwidth / 1e9:g} GB/s per NIC, "
                f"{self.nics} NIC(s) per node")


PROFILES = {
    "ndr": Network("NDR InfiniBand", 2e-6, 50e9, 1),
    "100gbe": Network("100 GbE (RoCE)", 5e-6, 12.5e9, 1),
}


def fail(message):
    sys.exit(f"scale_model.py: {message}")


class Node:
    """One node's measured times (a tuning file of a one-node layout, or of 1 rank per node)."""

    def __init__(self, path):
        try:
            self.file = json.loads(pathlib.Path(path).read_text())
        except (OSError, json.JSONDecodeError) as error:
            fail(f"{path}: {error}")
        if self.file.get("format") != "matex-tuning" or self.file.get("version") != 1:
            fail(f"{path}: not a version 1 tuning file (matex-tune writes them)")
        self.path = path
        self.ranks = self.file["ranks"]
        self.node_sizes = self.file["node_sizes"]
        self.q = self.node_sizes[0]  # ranks per node (the model takes nodes of one size)
        self.allreduce = self.file["collectives"]["allreduce"]
        chunk = re.search(r"chunk=(\d+)", self.file["layout"])
        self.chunk = int(chunk.group(1)) if chunk else MIB
        # A rank of this node receives and reduces at the pace of the node's best
        # bandwidth algorithm: per byte, its fitted beta x q / (2 (q - 1)).
        betas = [self.allreduce[a]["beta_s_per_byte"] for a in ("rs_ar_ag", "rs_ar_ag_cma") if a in self.allreduce]
        self.host_per_byte = min(betas) * self.q / (2 * (self.q - 1)) if betas and self.q > 1 else 0.0

    def seconds(self, algorithm, n):
        """The node part of `algorithm` at n bytes per rank, or None where not measured."""
        if self.q == 1 and algorithm in self.allreduce:
            return 0.0  # one rank per node: nothing to do inside it
        return self.measured_seconds(algorithm, n)

    def measured_seconds(self, algorithm, n):
        """Log-log interpolation between measured sizes. Past the largest, the steeper of
        the last segment and the fitted beta: a cost per byte only grows as the
        working set leaves the caches."""
        cost = self.allreduce.get(algorithm)
        if cost is None:
            return None
        points = cost["measured"]
        if n <= points[0][0]:
            return points[0][1]
        for (a, ta), (b, tb) in zip(points, points[1:]):
            if n <= b:
                x = math.log(n / a) / math.log(b / a)
                return math.exp(math.log(ta) + x * (math.log(tb) - math.log(ta)))
        last_bytes, last_seconds = points[-1]
        slope = cost["beta_s_per_byte"]
        if len(points) > 1:
            before_bytes, before_seconds = points[-2]
            slope = max(slope, (last_seconds - before_seconds) / (last_bytes - before_bytes))
        return last_seconds + (n - last_bytes) * slope


class AtWorkingSet:
    """`node` with `grown` times as many buffers on its host: each time is that of
    the size with the same working set, scaled back to the bytes asked for."""

    def __init__(self, node, grown):
        self.node, self.grown = node, grown
        self.q, self.chunk, self.host_per_byte = node.q, node.chunk, node.host_per_byte

    def seconds(self, algorithm, n):
        seconds = self.node.seconds(algorithm, n * self.grown)
        return None if seconds is None else seconds / self.grown


def allreduce_between_nodes(nodes, m, network, bandwidth):
    """Seconds for an allreduce of m bytes among `nodes` ranks, one per node, each
    sending at `bandwidth` and receiving at most as fast as its host reduces."""
    if nodes <= 1 or m <= 0:
        return 0.0
    steps = math.ceil(math.log2(nodes))
    per_byte = max(1 / bandwidth, network.host_per_byte)
    doubling = steps * (network.alpha + m * per_byte)
    rabenseifner = 2 * steps * network.alpha + 2 * (nodes - 1) / nodes * m * per_byte
    return min(doubling, rabenseifner)


def predict_parts(node, network, algorithm, nodes, n):
    """(node part, network part, ranks busy in the network part) of one allreduce, or None."""
    q = node.q
    if algorithm == "flat":
        # The inter-node steps carry the data of all q ranks at once through the node's NICs.
        shared = network.nic_bandwidth * min(q, network.nics) / q
        steps = math.ceil(math.log2(nodes)) if nodes > 1 else 0
        per_byte = max(1 / shared, network.host_per_byte)
        # Recursive doubling: every step moves all n; the node's own steps as measured.
        doubling = (node.seconds("flat", n), steps * (network.alpha + n * per_byte))
        # Rabenseifner: the far steps move 2 (N-1)/N n per rank; the near ones work on n/N.
        halving = (node.seconds("flat", max(n // nodes, 4)),
                   2 * steps * network.alpha + 2 * (nodes - 1) / nodes * n * per_byte)
        return min(doubling, halving, key=sum) + (nodes * q,)
    intra = node.seconds(algorithm, n)
    if intra is None:
        return None
    if algorithm == "rab":  # the leaders alone cross: one rank, one NIC per node
        return intra, allreduce_between_nodes(nodes, n, network, network.nic_bandwidth), nodes
    # rs_ar_ag and rs_ar_ag_cma: q rails at once, each on n/q, piece by piece.
    per_rail = network.nic_bandwidth * min(q, network.nics) / q
    pieces = max(1, math.ceil(n / node.chunk))
    return intra, pieces * allreduce_between_nodes(nodes, n / q / pieces, network, per_rail), nodes * q


def predict(node, network, algorithm, nodes, n):
    """Seconds for one allreduce of n bytes per rank on `nodes` nodes of node.q ranks, or None."""
    parts = predict_parts(node, network, algorithm, nodes, n)
    return None if parts is None else parts[0] + parts[1]


def best(node, network, nodes, n):
    times = {a: predict(node, network, a, nodes, n) for a in ALGORITHMS}
    times = {a: t for a, t in times.items() if t is not None}
    return min(times, key=times.get), times


def label(n):
    for unit, size in (("GiB", GIB), ("MiB", MIB), ("KiB", KIB)):
        if n >= size:
            return f"{n / size:g} {unit}"
    return f"{n} B"


def resnet50_bytes():
    total = 0
    for line in (HERE.parent / "harness" / "resnet50_shapes.txt").read_text().splitlines():
        if line.startswith("#") or not line.strip():
            continue
        shape = line.split("\t")[1]
        total += math.prod(int(d) for d in shape.split("x")) * 4
    return total


def print_prediction(node, network):
    print(f"# node: {node.ranks} ranks, measured by {node.path}; network: {network}")
    print("# predicted allreduce time (us) of each algorithm; * marks the fastest")
    for nodes in (1, 8, 64, 512, 4096):
        print(f"\n## {nodes} node(s), {nodes * node.ranks} ranks")
        print(f"{'bytes':>10} " + " ".join(f"{a:>14}" for a in ALGORITHMS))
        for n in SIZES:
            winner, times = best(node, network, nodes, n)
            cells = [f"{times[a] * 1e6:13.1f}{'*' if a == winner else ' '}" if a in times else f"{'-':>14}"
                     for a in ALGORITHMS]
            print(f"{label(n):>10} " + " ".join(cells))
    print("\n# crossovers: the sizes (powers of 2) from which the fastest algorithm changes")
    for nodes in (1, 8, 64, 512, 4096):
        changes, previous = [], None
        for power in range(2, 31):
            winner, _ = best(node, network, nodes, 1 << power)
            if winner != previous:
                changes.append(f"{label(1 << power)}: {winner}")
                previous = winner
        print(f"{nodes:>5} nodes: " + ", ".join(changes))


def resnet_rows(node, network, compute):
    n = resnet50_bytes()
    rows = []
    for nodes in (1, 8, 64, 512, 4096):
        winner, times = best(node, network, nodes, n)
        t = times[winner]
        exposed = max(t - 2 / 3 * compute, 0.0) if nodes > 1 else t
        rows.append((nodes, winner, t, times["rs_ar_ag"], compute / (compute + t), compute / (compute + exposed)))
    return n, rows


def print_resnet(node, compute):
    print(f"\n# ResNet-50 gradients fused into one allreduce per step; compute {compute * 1e3:g} ms per step")
    for key in ("ndr", "100gbe"):
        n, rows = resnet_rows(node, PROFILES[key].on(node), compute)
        print(f"## {PROFILES[key]}; {n / 1e6:.1f} MB per step")
        print(f"{'nodes':>6} {'ranks':>6} {'fastest':>13} {'allreduce ms':>13} {'rs_ar_ag ms':>12} {'efficiency':>11} "
              f"{'overlapped':>11}")
        for nodes, winner, t, rails, plain, overlapped in rows:
            print(f"{nodes:>6} {nodes * node.ranks:>6} {winner:>13} {t * 1e3:13.2f} {rails * 1e3:12.2f} {plain:11.1%} "
                  f"{overlapped:11.1%}")


def validation_rows(node, links, measured_paths, cores):
    """(layout, algorithm, bytes, predicted, measured) for every size of 1 MiB and more."""
    # One rank per virtual node: MPI between processes is the link, one per rank. The
    # hierarchical algorithms cross in MATEX_SHM_CHUNK_BYTES pieces, flat in one message:
    # each gets the link as measured that way (MPI's cost per byte depends on the size).
    def link(algorithm, at_bytes):
        """The link's alpha, and its cost per byte as measured with the working set of
        `at_bytes` per rank."""
        measured = "flat" if algorithm == "flat" else "rs_ar_ag"
        alpha = links.allreduce[measured]["alpha_s"]
        per_byte = (links.measured_seconds(measured, at_bytes) - alpha) / at_bytes
        return Network("virtual nodes", alpha, 1 / per_byte, node.q)

    calibration_ranks = max(node.ranks, links.ranks)

    def busy(ranks):  # how much slower a phase runs with `ranks` busy on `cores` cores
        return max(1.0, ranks / cores) / max(1.0, calibration_ranks / cores)

    rows = []
    for path in measured_paths:
        target = Node(path)
        sizes = target.node_sizes
        if len(set(sizes)) != 1:
            fail(f"{path}: uneven layout {sizes}: the model takes nodes of one size")
        q = sizes[0]
        model = node if q == node.q else links if q == 1 else None
        if model is None:
            fail(f"{path}: {q} ranks per node, but the node file has {node.q} and the link file 1")
        layout = ",".join(str(s) for s in sizes)
        for algorithm, cost in target.allreduce.items():
            if algorithm not in ALGORITHMS:
                continue
            for n, seconds in cost["measured"]:
                if n < MIB:
                    continue
                # The host holds target.ranks buffers of n bytes: the calibration met that
                # working set at n * target.ranks / calibration_ranks bytes per rank.
                grown = target.ranks / calibration_ranks
                parts = predict_parts(AtWorkingSet(model, grown), link(algorithm, n * grown), algorithm, len(sizes), n)
                if parts is not None:
                    intra, inter, crossing = parts
                    rows.append((layout, algorithm, n, intra * busy(target.ranks) + inter * busy(crossing), seconds))
    return link("rs_ar_ag", MIB), rows


def print_validation(node, links_path, measured_paths, cores):
    network, rows = validation_rows(node, Node(links_path), measured_paths, cores)
    print(f"# validation: {network}; node {node.path}; link {links_path}; {cores} cores")
    print(f"{'layout':>9} {'algorithm':>13} {'bytes':>9} {'predicted us':>13} {'measured us':>12} {'off':>7}")
    worst = 0.0
    for layout, algorithm, n, predicted, measured in rows:
        off = predicted / measured - 1
        worst = max(worst, abs(off))
        print(f"{layout:>9} {algorithm:>13} {label(n):>9} {predicted * 1e6:13.1f} {measured * 1e6:12.1f} {off:+7.1%}")
    print(f"# largest difference from 1 MiB up: {worst:.1%}")
    return rows


def plot(node, compute, outdir, validation):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    outdir = pathlib.Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    network = PROFILES["ndr"].on(node)
    figure, axes = plt.subplots(1, 3, figsize=(15, 4.2), sharey=True)
    for axis, nodes in zip(axes, (8, 512, 4096)):
        for algorithm in ALGORITHMS:
            times = [predict(node, network, algorithm, nodes, n) for n in SIZES]
            if all(t is not None for t in times):
                axis.loglog(SIZES, [t * 1e6 for t in times], label=algorithm)
        axis.set_title(f"{nodes} nodes x {node.ranks} ranks, {network.name}")
        axis.set_xlabel("bytes per rank")
        axis.grid(True, which="both", alpha=0.3)
    axes[0].set_ylabel("predicted allreduce time (us)")
    axes[0].legend()
    figure.tight_layout()
    figure.savefig(outdir / "predicted_times.png", dpi=110)
    plt.close(figure)

    figure, axis = plt.subplots(figsize=(7, 4.2))
    n = resnet50_bytes()
    for key in ("ndr", "100gbe"):
        efficiency = []
        for nodes in NODE_COUNTS:
            winner, times = best(node, PROFILES[key].on(node), nodes, n)
            efficiency.append(compute / (compute + times[winner]))
        axis.semilogx(NODE_COUNTS, efficiency, marker="o", label=f"{PROFILES[key].name}, no overlap")
    axis.set_xscale("log", base=2)
    axis.set_xlabel("nodes")
    axis.set_ylabel("scaling efficiency")
    axis.set_title(f"ResNet-50 (102 MB of gradients), {compute * 1e3:g} ms compute per step")
    axis.set_ylim(0, 1.05)
    axis.grid(True, alpha=0.3)
    axis.legend()
    figure.tight_layout()
    figure.savefig(outdir / "resnet50_efficiency.png", dpi=110)
    plt.close(figure)

    if validation:
        figure, axis = plt.subplots(figsize=(7, 4.2))
        for layout in sorted({row[0] for row in validation}):
            for algorithm in sorted({row[1] for row in validation if row[0] == layout}):
                rows = [row for row in validation if row[0] == layout and row[1] == algorithm]
                line, = axis.loglog([r[2] for r in rows], [r[4] * 1e6 for r in rows], marker="o", linestyle="",
                                    label=f"{layout} {algorithm}")
                axis.loglog([r[2] for r in rows], [r[3] * 1e6 for r in rows], color=line.get_color())
        axis.set_xlabel("bytes per rank")
        axis.set_ylabel("allreduce time (us)")
        axis.set_title("virtual nodes: measured (dots) and predicted (lines)")
        axis.grid(True, which="both", alpha=0.3)
        axis.legend(fontsize=7, ncol=2)
        figure.tight_layout()
        figure.savefig(outdir / "validation.png", dpi=110)
        plt.close(figure)
    print(f"# plots written to {outdir}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--intra", required=True, help="tuning file measured on one node (matex-tune)")
    parser.add_argument("--network", choices=sorted(PROFILES), default="ndr")
    parser.add_argument("--nics", type=int, help="NICs per node (default: the profile's)")
    parser.add_argument("--compute", type=float, default=0.3, help="compute seconds per training step")
    parser.add_argument("--validate", metavar="LINK_FILE", help="tuning file of layout 1,1 (one rank per node)")
    parser.add_argument("--measured", nargs="*", default=[], help="tuning files of the virtual layouts to predict")
    parser.add_argument("--cores", type=int, default=0, help="cores of the machine the files were measured on")
    parser.add_argument("--plot", metavar="DIR", help="write PNG plots there")
    args = parser.parse_args()
    node = Node(args.intra)
    if len(node.node_sizes) != 1:
        fail(f"{args.intra}: measured on {len(node.node_sizes)} nodes; --intra needs a one-node layout")
    network = PROFILES[args.network].on(node, args.nics)
    validation = None
    if args.validate:
        cores = args.cores or len(__import__("os").sched_getaffinity(0))
        validation = print_validation(node, args.validate, args.measured, cores)
    else:
        print_prediction(node, network)
        print_resnet(node, args.compute)
    if args.plot:
        plot(node, args.compute, args.plot, validation)


if __name__ == "__main__":
    main()
