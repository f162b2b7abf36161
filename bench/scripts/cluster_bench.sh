#!/usr/bin/env bash
# Benchmarks across the testbed's separate hosts (tests/cluster/testbed.sh), with every host's link shaped
# to each rate in turn: matex-bench --compare mpi and --compare all on 2 hosts x 1 rank and 2 hosts x 2
# ranks. Writes the JSON and text of each run to OUT, then the tables and plot (bench/analysis/cluster_report.py).
#   bench/scripts/cluster_bench.sh BUILD_DIR OUT [RATES...]      (default rates: 1gbit 5gbit 10gbit)
#   SHAPES="2x2" bench/scripts/cluster_bench.sh ...              (default shapes: 2x1 2x2)
# Needs root; brings up 2 hosts (and leaves them down afterwards).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:?"cluster_bench.sh: give the build directory"} out=${2:?"cluster_bench.sh: give the output directory"}
shift 2
rates=("${@:-}")
[[ -n ${rates[0]} ]] || rates=(1gbit 5gbit 10gbit)
testbed=$here/../../tests/cluster/testbed.sh
bench=$(cd "$build" && pwd)/bin/matex-bench
mkdir -p "$out"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export XDG_CACHE_HOME=$out/no-tuning-cache  # no tuning file steers auto
"$testbed" up 2 > /dev/null
trap '"$testbed" down' EXIT
for rate in "${rates[@]}"; do
  for host in h1 h2; do "$testbed" shape "$host" "$rate"; done
  for shape in ${SHAPES:-2x1 2x2}; do
    for compare in mpi all; do
      name=$rate.$shape.$compare
      echo "# $name"
      MATEX_TESTBED_SHAPE=$shape "$here/../../tests/cluster/mpirun_on_hosts.sh" -np $((2 * ${shape#2x})) \
        "$bench" -b 1K -e 64M -f 4 -n 10 -w 3 --compare "$compare" -J "$out/$name.json" > "$out/$name.txt" 2>&1
      grep -E "worst auto|Avg bus" "$out/$name.txt" || true
    done
  done
done
python3 "$here/../analysis/cluster_report.py" "$out"
