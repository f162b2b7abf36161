"""selection_races.py - reading the races of bench/scripts/selection_check.sh, for
selection_summary.py (one race) and selection_medians.py (several).

A race is a folder of matex-bench --compare all documents, LAYOUT.MODE.json,
beside the tuning files (*.tuning.json) the race wrote for MATEX_CALIBRATE=file.
"""
import json
import pathlib


def race_documents(out):
    """(LAYOUT.MODE, document) for each --compare all document in `out`, by name."""
    for path in sorted(pathlib.Path(out).glob("*.json")):
        if path.name.endswith(".tuning.json"):
            continue
        document = json.loads(path.read_text())
        if document.get("compare") == "all":
            yield path.name[:-len(".json")], document


def forced_times(row):
    """{algorithm: us} of the algorithms that ran as themselves in this row."""
    return {name: us for name, us in row["forced_time_us"].items() if us is not None}


def fastest_us(row):
    """The fastest time of every forced algorithm and MPI."""
    return min(min(forced_times(row).values()), row["mpi_time_us"])


def own_spread(row):
    """The noise reference: auto against the forced run of the algorithm auto
    itself ran, as max(a/b, b/a); None where auto ran two ("rab/rs_ar_ag")."""
    same = forced_times(row).get(row["algo"])
    return max(row["time_us"] / same, same / row["time_us"]) if same else None
