#!/usr/bin/env bash
# selection_check.sh OUTDIR [layouts...] - is auto the fastest choice? For each
# layout ("np:virtual nodes", e.g. 4:2,2; "2:" for one node of 2 ranks), writes
# a tuning file with matex-tune, then races auto against every forced
# algorithm and MPI in one matex-bench run (--compare all: interleaved call by
# call, -b 256 -e 64M -f 4), once with the start-up calibration (the default,
# MATEX_CALIBRATE=init) and once with the tuning file (MATEX_CALIBRATE=file).
# Prints per layout, mode and size: auto, the fastest forced algorithm, MPI,
# and auto against the fastest (bench/analysis/selection_summary.py). Needs build/bin.
set -euo pipefail
OUT=${1:?usage: selection_check.sh OUTDIR [np:nodes ...]}
shift
LAYOUTS=("$@")
[ ${#LAYOUTS[@]} -gt 0 ] || LAYOUTS=("2:" "4:2,2" "4:3,1" "4:1,1,1,1")
BIN=$(cd "$(dirname "$0")/../.." && pwd)/build/bin
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mkdir -p "$OUT"
SIZES=(-b 256 -e 64M -f 4 --scale-iterations)
for layout in "${LAYOUTS[@]}"; do
  np=${layout%%:*}
  nodes=${layout#*:}
  name="np${np}_${nodes:-one}"
  name=${name//,/_}
  run() { MATEX_VIRTUAL_NODES=$nodes mpirun -np "$np" --oversubscribe -x MATEX_VIRTUAL_NODES "$@"; }
  run "$BIN/matex-tune" -o "$OUT/$name.tuning.json" -b 256 -e 64M -f 4 > "$OUT/$name.tune.txt"
  for mode in init file; do
    MATEX_CALIBRATE=$mode MATEX_TUNING_FILE=$OUT/$name.tuning.json \
      run -x MATEX_CALIBRATE -x MATEX_TUNING_FILE "$BIN/matex-bench" "${SIZES[@]}" --compare all \
      -J "$OUT/$name.$mode.json" > "$OUT/$name.$mode.txt"
  done
  echo "$name done"
done
python3 "$(dirname "$0")/../analysis/selection_summary.py" "$OUT"
