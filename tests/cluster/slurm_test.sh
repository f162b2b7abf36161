#!/usr/bin/env bash
# Slurm on the testbed (slurm.sh): srun --mpi=pmix starts matex-topo on 2 hosts, which must group its 2
# ranks into 2 nodes, one per testbed host, then python -m matex.verify runs a TF example through srun against
# its plain 1-process run. Skips (77) naming what is missing when Slurm, munge or the testbed is not there.
#   slurm_test.sh MATEX_TOPO PYTHON EXAMPLE
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
topo=${1:?"slurm_test.sh: give matex-topo's path"} python=${2:?"give the Python with matex"} example=${3:?"give an example script"}
"$here/slurm.sh" up 2
status=$?
((status == 0)) || exit $status
unset MATEX_VIRTUAL_NODES PYTHONPATH
# The same check as the thread budget's (check_thread_budget.py): 2 ranks on 2 nodes, each rank on a
# testbed host and within that host's CPUs, none marked shared.
status_file=$(mktemp)
trap 'rm -f "$status_file"; "$here/slurm.sh" down' EXIT
"$here/testbed.sh" status > "$status_file"
report=$(timeout 120 "$here/slurm.sh" srun -N 2 -n 2 --mpi=pmix "$topo" --json) \
  || { echo "FAIL: matex-topo under srun: $report"; exit 1; }
python3 "$here/check_thread_budget.py" "$status_file" 2x1 <<< "$report" || exit 1
timeout 600 "$python" -m matex.verify -np 2 --mpirun "$here/srun_as_mpirun.sh" "$example"
