#!/usr/bin/env bash
# Slurm on the testbed (slurm.sh): srun --mpi=pmix starts matex-topo on 2 hosts, which must group its 2
# ranks into 2 nodes named h1 and h2, then python -m matex.verify runs a TF example through srun against
# its plain 1-process run. Skips (77) naming what is missing when Slurm, munge or the testbed is not there.
#   slurm_test.sh MATEX_TOPO PYTHON EXAMPLE
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
topo=${1:?"slurm_test.sh: give matex-topo's path"} python=${2:?"give the Python with matex"} example=${3:?"give an example script"}
"$here/slurm.sh" up 2
status=$?
((status == 0)) || exit $status
trap '"$here/slurm.sh" down' EXIT
unset MATEX_VIRTUAL_NODES PYTHONPATH
out=$(timeout 120 "$here/slurm.sh" srun -N 2 -n 2 --mpi=pmix "$topo" 2>&1)
echo "$out"
grep -q "2 ranks on 2 nodes" <<< "$out" || { echo "FAIL: matex-topo under srun did not see 2 ranks on 2 nodes"; exit 1; }
for host in h1 h2; do
  grep -Eq "^ +[01] +[01] +0 +1 +$host/" <<< "$out" || { echo "FAIL: no rank of matex-topo ran alone on host $host"; exit 1; }
done
timeout 600 "$python" -m matex.verify -np 2 --mpirun "$here/srun_as_mpirun.sh" "$example"
