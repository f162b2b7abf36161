#!/usr/bin/env bash
# Reproduces the figures of docs/benchmarks.md: three runs of float32 sum
# allreduce with --compare mpi on 2 ranks (4 B .. 256 MiB) and on 4 ranks in
# two virtual nodes (16 MiB .. 256 MiB, oversubscribed on this 2-core
# machine), then the busbw plots. Ranks are bound to cores, as mpirun does by
# default for 2 ranks; with 4 ranks on 2 cores, unbound ranks wander between the
# cores and both libraries' times swing by 2x from run to run.
#
# usage: bench/scripts/run_reference_benchmarks.sh [build-dir] [output-dir]
set -euo pipefail
BUILD=${1:-build}
OUT=${2:-docs/benchmarks}
mkdir -p "$OUT"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

for run in 1 2 3; do
  mpirun -np 2 --bind-to core "$BUILD/bin/matex-bench" -b 4 -e 256M -f 4 -n 20 -w 5 -d float32 -o sum --compare mpi \
    --scale-iterations \
    -J "$OUT/np2_run$run.json" > "$OUT/np2_run$run.txt"
  MATEX_VIRTUAL_NODES=2,2 mpirun -np 4 --oversubscribe --bind-to core:overload-allowed --map-by core "$BUILD/bin/matex-bench" -b 16M -e 256M -f 4 -n 10 -w 3 \
    -d float32 -o sum --compare mpi -J "$OUT/np4_2_2_run$run.json" > "$OUT/np4_2_2_run$run.txt"
done
python3 bench/analysis/plot_busbw.py -o "$OUT/busbw_np2.png" "$OUT"/np2_run*.json
python3 bench/analysis/plot_busbw.py -o "$OUT/busbw_np4_2_2.png" "$OUT"/np4_2_2_run*.json
python3 bench/analysis/summarize_runs.py "$OUT"/np2_run*.json > "$OUT/np2_summary.md"
python3 bench/analysis/summarize_runs.py "$OUT"/np4_2_2_run*.json > "$OUT/np4_2_2_summary.md"
