#!/usr/bin/env bash
# The demo: set up, build, then show 4 ranks in 2 virtual nodes (matex-topo)
# and a checked allreduce with every algorithm on them.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh

cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$MATEX_JOBS" --target matex-topo matex-allreduce-demo

echo
echo "== matex-topo: 4 ranks, MATEX_VIRTUAL_NODES=2,2 =="
MATEX_VIRTUAL_NODES=2,2 mpirun -np 4 --oversubscribe build/bin/matex-topo
echo
echo "== allreduce on the same layout =="
MATEX_VIRTUAL_NODES=2,2 mpirun -np 4 --oversubscribe build/bin/matex-allreduce-demo
