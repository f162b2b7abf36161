#!/usr/bin/env bash
# Runs a program with plain mpirun on the testbed's hosts, SLOTS ranks per host, then checks that no
# host's private /dev/shm kept a segment. Exit 77 (a skip) with the reason when no testbed is up.
#   run_on_hosts.sh SLOTS PROGRAM [ARGS...]
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
testbed=$here/testbed.sh
slots=${1:?"run_on_hosts.sh: give the ranks per host"}
shift
if ! hosts=$("$testbed" hosts "$slots" 2>/dev/null); then
  why=$("$testbed" check | sed 's/^SKIP: //')
  [[ $why == ok:* ]] && why="no testbed is up (the fixture cluster.up failed: see its output)"
  echo "SKIP: $why"
  exit 77
fi
host_count=$(tr ',' '\n' <<< "$hosts" | wc -l)
mapfile -t mpirun_args < <("$testbed" mpirun-args)
unset MATEX_VIRTUAL_NODES
echo "# mpirun on $host_count testbed hosts: --host $hosts"
"${MPIEXEC:-mpirun}" "${mpirun_args[@]}" --host "$hosts" -np $((host_count * slots)) "$@"
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
