#!/usr/bin/env bash
# Runs a program with plain mpirun, started on the testbed's head host, on HOSTS testbed hosts with SLOTS
# ranks each, then checks that no host's private /dev/shm kept a segment. Exit 77 (a skip) with the
# reason when no testbed is up.
#   run_on_hosts.sh HOSTSxSLOTS PROGRAM [ARGS...]      e.g. run_on_hosts.sh 2x1 matex-mpi-collectives
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
testbed=$here/testbed.sh
shape=${1:?"run_on_hosts.sh: give HOSTSxSLOTS, e.g. 2x1"}
shift
[[ $shape =~ ^([0-9]+)x([0-9]+)$ ]] || { echo "run_on_hosts.sh: '$shape' is not HOSTSxSLOTS, e.g. 2x1" >&2; exit 2; }
host_count=${BASH_REMATCH[1]} slots=${BASH_REMATCH[2]}
if ! hosts=$("$testbed" hosts "$slots" "$host_count" 2>/dev/null); then
  why=$("$testbed" check | sed 's/^SKIP: //')
  [[ $why == ok:* ]] && why="no testbed is up (the fixture cluster.up failed: see its output)"
  echo "SKIP: $why"
  exit 77
fi
mapfile -t mpirun_args < <("$testbed" mpirun-args)
unset MATEX_VIRTUAL_NODES
echo "# mpirun on $host_count testbed hosts: --host $hosts"
"$testbed" launch "${MPIEXEC:-mpirun}" "${mpirun_args[@]}" --host "$hosts" -np $((host_count * slots)) "$@"
status=$?
for host in $("$testbed" status | awk '{print $1}'); do
  left=$("$testbed" exec "$host" ls -A /dev/shm)
  if [[ -n $left ]]; then
    echo "FAIL: host $host kept shared-memory segments: $left"
    "$testbed" exec "$host" sh -c 'rm -rf /dev/shm/* /dev/shm/.[!.]*' 2>/dev/null
    status=1
  fi
done
exit $status
