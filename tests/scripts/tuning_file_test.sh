#!/usr/bin/env bash
# tuning_file_test.sh MPIEXEC MATEX_TUNE MATEX_BENCH - matex-tune writes a
# tuning file that MATEX_CALIBRATE=file serves (every result still checked),
# and every file that does not fit is refused with a warning naming why
# (another layout, a stale library, another host kind, malformed, missing,
# bad values), after which the table is measured at init and results stay right.
# Under MATEX_CALIBRATE=auto (the default) a missing file is silent. In 2,2 the
# file's broadcast times choose between flat and hier by size.
set -euo pipefail
MPIEXEC=$1
TUNE=$2
BENCH=$3
DIR=$(mktemp -d)
trap 'rm -rf "$DIR"' EXIT
run() {  # run NP NODES FILE OUT: matex-bench's explanation, then a checked sweep
  local np=$1 nodes=$2 file=$3 out=$4
  MATEX_VIRTUAL_NODES=$nodes MATEX_CALIBRATE=file MATEX_TUNING_FILE=$file \
    "$MPIEXEC" -np "$np" --oversubscribe -x MATEX_VIRTUAL_NODES -x MATEX_CALIBRATE -x MATEX_TUNING_FILE \
    "$BENCH" --explain > "$out" 2>&1
  MATEX_VIRTUAL_NODES=$nodes MATEX_CALIBRATE=file MATEX_TUNING_FILE=$file \
    "$MPIEXEC" -np "$np" --oversubscribe -x MATEX_VIRTUAL_NODES -x MATEX_CALIBRATE -x MATEX_TUNING_FILE \
    "$BENCH" -b 4 -e 1M -f 8 -n 2 -w 1 -c 1 -o sum >> "$out" 2>&1
  grep -q "Out of bounds values : 0 OK" "$out" || { cat "$out"; echo "FAIL: wrong results ($out)"; exit 1; }
}
expect() {  # expect FILE TEXT WHAT
  grep -qF -- "$2" "$1" || { cat "$1"; echo "FAIL: $3: no '$2'"; exit 1; }
  echo "ok: $3"
}

# The default path: $XDG_CACHE_HOME/matex/tuning.json, for writing and reading.
XDG_CACHE_HOME=$DIR "$MPIEXEC" -np 2 --oversubscribe -x XDG_CACHE_HOME "$TUNE" -b 64 -e 256K -f 4 -r 2 > "$DIR/tune.txt"
GOOD=$DIR/matex/tuning.json
expect "$DIR/tune.txt" "# wrote $GOOD" "matex-tune writes the default path"
python3 - "$GOOD" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))
assert t["format"] == "matex-tuning" and t["version"] == 1 and t["ranks"] == 2, t
assert set(t["collectives"]) == {"allreduce", "allreduce_in_place", "broadcast", "allgather", "reduce_scatter"}, t["collectives"].keys()
flat = t["collectives"]["allreduce"]["flat"]
sizes = [b for b, s in flat["measured"]]
assert sizes == [64, 256, 1024, 4096, 16384, 65536, 262144], sizes
assert all(s > 0 for b, s in flat["measured"]) and flat["alpha_s"] >= 0 and flat["beta_s_per_byte"] >= 0, flat
print("ok: the file holds every collective, the sizes asked for, and non-negative fits")
PY
XDG_CACHE_HOME=$DIR MATEX_CALIBRATE=file "$MPIEXEC" -np 2 --oversubscribe -x XDG_CACHE_HOME -x MATEX_CALIBRATE \
  "$BENCH" --explain > "$DIR/default.txt" 2>&1
expect "$DIR/default.txt" "from a tuning file" "the default path serves"

run 2 "" "$GOOD" "$DIR/good.txt"
expect "$DIR/good.txt" "from a tuning file" "the file serves its own layout"
if grep -q "refusing" "$DIR/good.txt"; then cat "$DIR/good.txt"; echo "FAIL: a fitting file was refused"; exit 1; fi

# MATEX_CALIBRATE=auto (the default): a missing file is no warning and keeps
# the fixed sizes; the default path's file serves; an unfit one is refused,
# naming why, and the fixed sizes stay.
explain_auto() {  # explain_auto CACHE_DIR OUT [TUNING_FILE]
  XDG_CACHE_HOME=$1 MATEX_TUNING_FILE=${3:-} "$MPIEXEC" -np 2 --oversubscribe -x XDG_CACHE_HOME -x MATEX_TUNING_FILE \
    "$BENCH" --explain > "$2" 2>&1
}
explain_auto "$DIR/empty" "$DIR/auto_none.txt"
expect "$DIR/auto_none.txt" "fixed sizes" "auto without a file keeps the fixed sizes"
if grep -q "warn" "$DIR/auto_none.txt"; then cat "$DIR/auto_none.txt"; echo "FAIL: auto warned of no file"; exit 1; fi
explain_auto "$DIR" "$DIR/auto_default.txt"
expect "$DIR/auto_default.txt" "from a tuning file" "auto serves the default path's file"
sed 's/"library": "[^"]*"/"library": "0.0.0"/' "$GOOD" > "$DIR/auto_stale.json"
explain_auto "$DIR/empty" "$DIR/auto_stale.txt" "$DIR/auto_stale.json"
expect "$DIR/auto_stale.txt" "MATEX_CALIBRATE=auto: refusing the tuning file $DIR/auto_stale.json: stale" \
  "auto refuses a stale file, naming why"
expect "$DIR/auto_stale.txt" "fixed sizes" "auto keeps the fixed sizes after refusing"

refused() {  # refused NAME NP NODES FILE TEXT
  run "$2" "$3" "$4" "$DIR/$1.txt"
  expect "$DIR/$1.txt" "$5" "$1 refused, naming why"
  expect "$DIR/$1.txt" "measured at init" "$1: init measures instead"
}
refused layout 4 2,2 "$GOOD" "measured for another layout (p 2, here 4, nodes 2, here 2,2"
sed 's/"library": "[^"]*"/"library": "0.0.0"/' "$GOOD" > "$DIR/stale.json"
refused stale 2 "" "$DIR/stale.json" "stale: written by libmatexcomm 0.0.0"
sed 's/"host_kind": "[^"]*"/"host_kind": "Other CPU; 1 package, 64 cores, 128 PUs"/' "$GOOD" > "$DIR/host.json"
refused host 2 "" "$DIR/host.json" "another host kind (Other CPU; 1 package, 64 cores, 128 PUs, here"
head -c 300 "$GOOD" > "$DIR/cut.json"
refused truncated 2 "" "$DIR/cut.json" "malformed JSON at byte"
refused missing 2 "" "$DIR/none.json" "cannot read the tuning file $DIR/none.json"
sed 's/"measured": \[\[64, [^]]*\]/"measured": [[64, -1]/' "$GOOD" > "$DIR/negative.json"
refused negative 2 "" "$DIR/negative.json" "measured[0]: expected seconds above 0"
sed 's/"version": 1/"version": 99/' "$GOOD" > "$DIR/version.json"
refused version 2 "" "$DIR/version.json" "tuning file format version 99, this library reads 1"

# Broadcast in 2,2, where the hierarchy can help: the file's broadcast times
# choose by size. The file says flat is 1000x faster at 64 B and hier at 256 B,
# so auto runs flat up to 128 B (halfway) and hier above; every result is checked.
MATEX_VIRTUAL_NODES=2,2 "$MPIEXEC" -np 4 --oversubscribe -x MATEX_VIRTUAL_NODES "$TUNE" -o "$DIR/2_2.json" \
  -b 64 -e 256 -f 4 -r 1 > "$DIR/tune_2_2.txt"
python3 - "$DIR/2_2.json" "$DIR/2_2_broadcast.json" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))
b = t["collectives"]["broadcast"]
assert set(b) == {"flat", "hier"}, b.keys()
assert [s for s, _ in b["flat"]["measured"]] == [64, 256], b["flat"]["measured"]
b["flat"]["measured"] = [[64, 1e-6], [256, 1e-3]]
b["hier"]["measured"] = [[64, 1e-3], [256, 1e-6]]
json.dump(t, open(sys.argv[2], "w"))
PY
broadcast_run() {  # broadcast_run FILE OUT
  MATEX_VIRTUAL_NODES=2,2 MATEX_CALIBRATE=file MATEX_TUNING_FILE=$1 "$MPIEXEC" -np 4 --oversubscribe \
    -x MATEX_VIRTUAL_NODES -x MATEX_CALIBRATE -x MATEX_TUNING_FILE "$BENCH" --explain > "$2" 2>&1
  MATEX_VIRTUAL_NODES=2,2 MATEX_CALIBRATE=file MATEX_TUNING_FILE=$1 "$MPIEXEC" -np 4 --oversubscribe \
    -x MATEX_VIRTUAL_NODES -x MATEX_CALIBRATE -x MATEX_TUNING_FILE "$BENCH" --coll broadcast -r 3 \
    -b 64 -e 1K -f 4 -n 2 -w 1 >> "$2" 2>&1
  grep -q "Out of bounds values : 0 OK" "$2" || { cat "$2"; echo "FAIL: wrong broadcast results ($2)"; exit 1; }
}
algo_at() {  # algo_at OUT BYTES: the algorithm column of the table row of that size (not --explain's)
  awk -v b="$2" '$1 == b && $3 == "float32" { print $NF }' "$1"
}
broadcast_run "$DIR/2_2_broadcast.json" "$DIR/broadcast.txt"
expect "$DIR/broadcast.txt" "broadcast under auto: measured in a tuning file" "the file's broadcast table serves"
expect "$DIR/broadcast.txt" "up to 128 B: flat" "--explain shows the broadcast bands"
for row in "64 flat" "256 hier" "1024 hier"; do
  set -- $row
  got=$(algo_at "$DIR/broadcast.txt" "$1")
  [ "$got" = "$2" ] || { cat "$DIR/broadcast.txt"; echo "FAIL: broadcast of $1 B ran '$got', the file says $2"; exit 1; }
done
echo "ok: broadcast runs flat at 64 B and hier from 256 B, as the file's times say"

# Whether ranks share cores follows the PUs they may run on (their affinity),
# not the PUs the host has online: 2 ranks confined to one PU share it, 2
# ranks bound to a PU each do not. (Open MPI must be told to yield there too:
# without mpi_yield_when_idle its own polling makes this one size take 80 s.)
if command -v taskset > /dev/null; then
  first_pu=$(taskset -pc $$ | sed 's/.*: *//; s/[,-].*//')
  taskset -c "$first_pu" "$MPIEXEC" -np 2 --oversubscribe --bind-to none --mca mpi_yield_when_idle 1 "$TUNE" \
    -o "$DIR/one_pu.json" -b 256 -e 256 > "$DIR/one_pu.txt" 2>&1 ||
    { cat "$DIR/one_pu.txt"; echo "FAIL: matex-tune on one PU"; exit 1; }
  expect "$DIR/one_pu.txt" ";shared=1;" "2 ranks under taskset -c $first_pu share a PU"
  if [ "$(nproc)" -ge 2 ]; then
    "$MPIEXEC" -np 2 --bind-to hwthread "$TUNE" -o "$DIR/two_pus.json" -b 256 -e 256 > "$DIR/two_pus.txt" 2>&1 ||
      { cat "$DIR/two_pus.txt"; echo "FAIL: matex-tune with a PU per rank"; exit 1; }
    expect "$DIR/two_pus.txt" ";shared=0;" "2 ranks bound to a PU each do not"
  fi
else
  echo "skipped: no taskset here to confine ranks to one PU"
fi
echo "PASS"
