#!/usr/bin/env python3
"""selection_medians_test.py - bench/analysis/selection_medians.py on made-up races.

Three races of one layout and mode, with the figures chosen so that each rule
shows: a row within 10 % in two races of three (median within), a row 1.30x
off in every race with auto close to its own forced run (a miss), a row 1.30x
off where auto was 1.5x off its own forced run (within the noise, no miss),
and a row where auto ran two algorithms (no spread: 1.0).
"""
import json
import pathlib
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[2]


def row(size, auto, algo, forced, mpi, inplace=False):
    return {"size": size, "inplace": inplace, "time_us": auto, "algo": algo, "forced_time_us": forced,
            "mpi_time_us": mpi}


def race(first_ratio):
    return {"compare": "all", "results": [
        # fastest 100 (flat); auto ran flat
        row(256, 100 * first_ratio, "flat", {"flat": 100, "rab": 200}, 150),
        # fastest 100 (MPI); auto's own algorithm forced took what auto took: a miss
        row(1024, 130, "rab", {"flat": 140, "rab": 128}, 100),
        # 1.3x the fastest, but 1.5x off its own forced run: noise
        row(4096, 130, "rab", {"flat": 100, "rab": 195}, 120),
        # two algorithms: no spread
        row(16384, 105, "rab/rs_ar_ag", {"flat": 100, "rab": 110}, 120),
    ]}


with tempfile.TemporaryDirectory() as tmp:
    dirs = []
    for index, first in enumerate((1.05, 1.20, 1.08)):
        out = pathlib.Path(tmp) / f"race{index}"
        out.mkdir()
        (out / "np2_one.init.json").write_text(json.dumps(race(first)))
        (out / "np2_one.init.tuning.json").write_text("{}")  # skipped by name
        dirs.append(str(out))
    text = subprocess.run([sys.executable, str(ROOT / "bench" / "analysis" / "selection_medians.py"), *dirs],
                          check=True, capture_output=True, text=True).stdout
    lines = {int(line.split()[0]): line for line in text.splitlines() if line.strip()[:1].isdigit()}
    assert set(lines) == {256, 1024, 4096, 16384}, text
    assert lines[256].split()[1] == "1.08" and "(miss)" not in lines[256], lines[256]
    assert lines[1024].split()[1] == "1.30" and lines[1024].split()[2] == "1.02" and "(miss)" in lines[1024], lines[1024]
    assert lines[4096].split()[1] == "1.30" and lines[4096].split()[2] == "1.50" and "(miss)" not in lines[4096], lines[4096]
    assert lines[16384].split()[2] == "1.00" and "(miss)" not in lines[16384], lines[16384]
    assert "within 10 % of the fastest in 2 of 4 rows" in text and "spread in 1" in text, text
    one = subprocess.run([sys.executable, str(ROOT / "bench" / "analysis" / "selection_medians.py"), dirs[0]],
                         capture_output=True, text=True)
    assert one.returncode != 0, "one race must be refused"
print("PASS")
