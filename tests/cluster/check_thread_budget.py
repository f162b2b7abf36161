#!/usr/bin/env python3
"""check_thread_budget.py - checks matex-topo's JSON report (stdin) of a job on the testbed against each
host's CPU set (`testbed.sh status`, given as a file): see thread_budget_test.sh.

    check_thread_budget.py STATUS_FILE HOSTSxSLOTS < report.json
"""
import json
import re
import sys


def cpu_set(text):
    cpus = set()
    for part in text.split(","):
        low, _, high = part.partition("-")
        cpus.update(range(int(low), int(high or low) + 1))
    return cpus


def main():
    status_path, shape = sys.argv[1], sys.argv[2]
    hosts, slots = (int(n) for n in shape.split("x"))
    host_cpus = {}
    with open(status_path) as status:
        for line in status:
            match = re.match(r"(h\d+) \S+ cpus=(\S+)", line)
            if match:
                host_cpus[match[1]] = cpu_set(match[2])
    report = json.load(sys.stdin)
    failures = []
    if report["node_count"] != hosts or report["world_size"] != hosts * slots:
        failures.append(f"{report['world_size']} ranks on {report['node_count']} nodes, not {hosts} x {slots}")
    by_host = {}
    for rank in report["ranks"]:
        by_host.setdefault(rank["host"].split("/")[0], []).append(rank)
    for host, ranks in sorted(by_host.items()):
        own = host_cpus.get(host)
        if own is None:
            failures.append(f"ranks {[r['rank'] for r in ranks]} ran on {host}, which the testbed does not list")
            continue
        crowded = len(ranks) > len(own)
        taken = set()
        for rank in ranks:
            cpus = cpu_set(rank["thread_cpus"])
            shared = rank["threads"].endswith("shared")
            print(f"rank {rank['rank']} on {host} (cpus {sorted(own)}): thread_cpus {rank['thread_cpus']}, "
                  f"threads {rank['threads']}")
            if not cpus <= own:
                failures.append(f"rank {rank['rank']} on {host}: CPUs {sorted(cpus - own)} are not its host's "
                                f"({sorted(own)})")
            if shared != crowded:
                failures.append(f"rank {rank['rank']} on {host}: {len(ranks)} ranks on {len(own)} CPUs, yet "
                                f"threads says {'shared' if shared else 'not shared'}")
            if not crowded and cpus & taken:
                failures.append(f"rank {rank['rank']} on {host}: CPUs {sorted(cpus & taken)} also went to "
                                "another rank of the host")
            taken |= cpus
        if taken != own:
            failures.append(f"{host}: its ranks use CPUs {sorted(taken)}, not all of {sorted(own)}")
    for failure in failures:
        print("FAIL:", failure)
    if not failures:
        print(f"OK: {shape}: every rank's CPUs are its host's, split per host, sharing judged per host")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
