#!/usr/bin/env bash
# The thread budget across hosts (libmatexcomm/src/topology/thread_budget.cc): every rank's CPUs lie in its own host's
# CPU set, the ranks of a host split that set, and whether they share cores is judged per host from that
# host's set. Two jobs on the testbed, each checked by matex-topo's report against `testbed.sh status`:
#   - 2 hosts x 2 ranks: each host has one CPU, so its two ranks share it (threads "... shared");
#   - 3 hosts x 1 rank: on a 2-core machine h3 gets h1's CPU, yet each host has one rank for its one CPU,
#     so none shares, as separate machines would judge.
#   thread_budget_test.sh MATEX_TOPO        (exit 77, a skip, when no testbed of 3 hosts is up)
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
topo=${1:?"thread_budget_test.sh: give the matex-topo program"}
"$here/require_hosts.sh" 3 true || exit $?
status_file=$(mktemp)
trap 'rm -f "$status_file"' EXIT
"$here/testbed.sh" status > "$status_file"
rc=0
for shape in 2x2 3x1; do
  echo "# $shape"
  report=$("$here/run_on_hosts.sh" "$shape" "$topo" --json) || { echo "FAIL: matex-topo on $shape: $report"; rc=1; continue; }
  grep -v '^#' <<< "$report" | python3 "$here/check_thread_budget.py" "$status_file" "$shape" || rc=1
done
exit $rc
