#!/usr/bin/env bash
# An mpirun for the testbed, for scripts that take an mpirun command: runs mpirun on the testbed's head
# host with the testbed's options and --host for MATEX_TESTBED_SHAPE (HOSTSxSLOTS, e.g. 2x1) before the
# caller's own arguments (which give -np and the program). Exit 77 (a skip) with the reason when no
# testbed of that many hosts is up.
#   MATEX_TESTBED_SHAPE=2x1 mpirun_on_hosts.sh -np 2 python3 train.py
set -uo pipefail
testbed=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/testbed.sh
shape=${MATEX_TESTBED_SHAPE:-2x1}
[[ $shape =~ ^([0-9]+)x([0-9]+)$ ]] || { echo "mpirun_on_hosts.sh: MATEX_TESTBED_SHAPE='$shape' is not HOSTSxSLOTS" >&2; exit 2; }
if ! hosts=$("$testbed" hosts "${BASH_REMATCH[2]}" "${BASH_REMATCH[1]}" 2>/dev/null); then
  echo "SKIP: no testbed of ${BASH_REMATCH[1]} hosts is up ($("$testbed" check | sed 's/^SKIP: //'))"
  exit 77
fi
mapfile -t mpirun_args < <("$testbed" mpirun-args)
unset MATEX_VIRTUAL_NODES
exec "$testbed" launch "${MPIEXEC:-mpirun}" "${mpirun_args[@]}" --host "$hosts" "$@"
