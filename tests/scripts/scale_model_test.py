#!/usr/bin/env python3
"""scale_model_test.py - bench/analysis/scale_model.py against closed forms and its own files.

The network part against the alpha-beta formulas by hand; a node of one rank
costs nothing inside; times grow with size; a larger working set reads the
calibration at the same working set; past the largest size, the last slope; the ResNet-50 gradient set is
its 25,557,032 float32 parameters; every mode runs on the tuning files that
docs/scaling.md shows.
"""
import json
import math
import pathlib
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench" / "analysis"))
import scale_model as model  # noqa: E402

net = model.Network("test", 2e-6, 50e9, 1)
m = 8 << 20
# 8 nodes: 3 steps; Rabenseifner 6 alpha + 2 (7/8) m / B beats doubling's 3 (alpha + m / B).
assert math.isclose(model.allreduce_between_nodes(8, m, net, 50e9), 6 * 2e-6 + 2 * 7 / 8 * m / 50e9)
# Small messages: doubling, 3 (alpha + m / B).
assert math.isclose(model.allreduce_between_nodes(8, 64, net, 50e9), 3 * (2e-6 + 64 / 50e9))
assert model.allreduce_between_nodes(1, m, net, 50e9) == 0
# A slow host caps the rate.
slow = model.Network("slow host", 2e-6, 50e9, 1, host_per_byte=1 / 5e9)
assert math.isclose(model.allreduce_between_nodes(2, m, slow, 50e9), min(2e-6 + m / 5e9, 4e-6 + m / 5e9))

# A node of 2 ranks whose every algorithm costs a + b n (closed form), as a tuning file.
sizes = [256 << (2 * i) for i in range(8)]
costs = {"flat": (3e-6, 4e-10), "rab": (1e-6, 3e-10), "rs_ar_ag": (1e-6, 2e-10), "rs_ar_ag_cma": (3e-6, 1.5e-10)}
synthetic = {"format": "matex-tuning", "version": 1, "ranks": 2, "node_sizes": [2], "layout": "p=2;chunk=1048576",
             "collectives": {"allreduce": {a: {"alpha_s": x, "beta_s_per_byte": y,
                                               "measured": [[n, x + y * n] for n in sizes]}
                                           for a, (x, y) in costs.items()}}}
with tempfile.TemporaryDirectory() as directory:
    path = pathlib.Path(directory) / "node.json"
    path.write_text(json.dumps(synthetic))
    node = model.Node(path)
assert node.q == 2 and node.chunk == 1 << 20
assert math.isclose(node.host_per_byte, 1.5e-10)  # the best beta x q / (2 (q - 1))
ndr = model.PROFILES["ndr"].on(node)
for algorithm, (x, y) in costs.items():
    for nodes in (1, 8, 4096):
        times = [model.predict(node, ndr, algorithm, nodes, n) for n in model.SIZES]
        assert all(b >= a for a, b in zip(times, times[1:])), (algorithm, nodes, times)
    # One node: the measured times; past the largest size, its beta.
    for n in sizes + [4 * sizes[-1]]:
        assert math.isclose(model.predict(node, ndr, algorithm, 1, n), x + y * n), (algorithm, n)
# Twice the ranks on the host: the calibration's time at twice the size, per byte.
grown = model.AtWorkingSet(node, 2)
for algorithm, (x, y) in costs.items():
    for n in (512 << 10, sizes[-1]):  # 2 n measured, and past the largest
        assert math.isclose(grown.seconds(algorithm, n), (x + y * 2 * n) / 2), (algorithm, n)
# Past the largest size, a last segment steeper than the fit (the caches ran out) goes on.
convex = dict(synthetic, collectives={"allreduce": {"flat": {
    "alpha_s": 0.0, "beta_s_per_byte": 1e-10, "measured": [[1 << 20, 1e-4], [2 << 20, 2e-4], [4 << 20, 6e-4]]}}})
with tempfile.TemporaryDirectory() as directory:
    path = pathlib.Path(directory) / "convex.json"
    path.write_text(json.dumps(convex))
    steep = model.Node(path)
assert math.isclose(steep.seconds("flat", 8 << 20), 6e-4 + (4 << 20) * (4e-4 / (2 << 20)))

# 8 nodes of rs_ar_ag at 4 MiB: the node part, then 2 rails of 2 MiB in 1 MiB pieces each.
n = 4 << 20
piece = model.allreduce_between_nodes(8, n / 2 / 4, ndr, 50e9 / 2)
assert math.isclose(model.predict(node, ndr, "rs_ar_ag", 8, n), 1e-6 + 2e-10 * n + 4 * piece)
# rab: the leaders alone cross, each with a whole NIC.
assert math.isclose(model.predict(node, ndr, "rab", 8, n), 1e-6 + 3e-10 * n + model.allreduce_between_nodes(8, n, ndr, 50e9))

docs = ROOT / "docs" / "scaling"
links = model.Node(docs / "tune_np2_1_1.json")
assert links.q == 1 and links.seconds("rs_ar_ag", m) == 0  # one rank per node: nothing inside
assert model.resnet50_bytes() == 25557032 * 4

script = str(ROOT / "bench" / "analysis" / "scale_model.py")
out = subprocess.run([sys.executable, script, "--intra", str(docs / "tune_np2_one_node.json"), "--network", "100gbe"],
                     check=True, capture_output=True, text=True).stdout
assert "# crossovers" in out and "ResNet-50" in out and "4096" in out, out
out = subprocess.run([sys.executable, script, "--intra", str(docs / "tune_np2_one_node.json"), "--validate",
                      str(docs / "tune_np2_1_1.json"), "--measured", str(docs / "tune_np4_2_2.json"), "--cores", "2"],
                     check=True, capture_output=True, text=True).stdout
assert "largest difference from 1 MiB up" in out and "2,2" in out, out
bad = subprocess.run([sys.executable, script, "--intra", str(docs / "tune_np4_2_2.json")], capture_output=True, text=True)
assert bad.returncode != 0 and "needs a one-node layout" in bad.stderr, bad.stderr
print("scale_model_test: PASS")
