#!/usr/bin/env bash
# run.sh [build|run] - the engine suite under AddressSanitizer and
# ThreadSanitizer (CI runs this from scripts/test.sh). Builds build-asan/ and
# build-tsan/ with only the engine's tests, then runs them on 2 ranks and on 4
# ranks in layouts 2,2 and 3,1. "build" only builds, "run" only runs what was
# built; no argument does both.
#   ASan: any memory error fails. Leaks: Open MPI leaks at exit and unloads its
#   plugins (their frames show as "<unknown module>"), so the leak report fails
#   the run only when a leaked block's stack has a symbolized frame of our code.
#   TSan: any report fails; tsan.supp hides what happens inside MPI only.
set -euo pipefail
cd "$(dirname "$0")/../.."
JOBS=${MATEX_JOBS:-2}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 MATEX_TIMEOUT_SECONDS=120
SUPP_DIR=$PWD/tests/sanitizers
LOG=$(mktemp -d)
trap 'rm -rf "$LOG"' EXIT

build() {  # build <dir> <sanitizer>
  # -O1: sanitizers report as well there, and it compiles faster than -O2. A unity build (each target's
  # files compiled a batch at a time) parses the shared headers once per batch: 240 CPU-s became 160
  # for the ASan tree; CI builds these trees beside its TensorFlow tests, which that CPU time slows.
  cmake -S . -B "$1" -DCMAKE_UNITY_BUILD=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g" \
    -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g" -DMATEX_BUILD_TESTS=ON -DMATEX_BUILD_BENCH=OFF \
    -DMATEX_WITH_CUDA=OFF -DMATEX_WITH_TF=OFF -DMATEX_WITH_TORCH=OFF -DCMAKE_CXX_FLAGS="-fsanitize=$2 -fno-omit-frame-pointer" \
    -DCMAKE_C_FLAGS="-fsanitize=$2" -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=$2" \
    -DCMAKE_SHARED_LINKER_FLAGS="-fsanitize=$2" > "$LOG/configure-$2.txt" ||
    { echo "FAIL: configuring $1"; tail -40 "$LOG/configure-$2.txt"; exit 1; }
  cmake --build "$1" -j"$JOBS" --target matex-mpi-engine matex-negotiation-tests > "$LOG/build-$2.txt" ||
    { echo "FAIL: building $1"; tail -60 "$LOG/build-$2.txt"; exit 1; }
}

layouts=("2 -" "4 2,2" "4 3,1")
run_layouts() {  # run_layouts <binary> <sanitizer> <env...>
  local binary=$1 san=$2; shift 2
  for layout in "${layouts[@]}"; do
    set -- $layout "$@"
    local np=$1 nodes=$2; shift 2
    local out="$LOG/$san-np$np-$nodes.txt"
    if [ "$nodes" = - ]; then unset MATEX_VIRTUAL_NODES; else export MATEX_VIRTUAL_NODES=$nodes; fi
    if ! env "$@" mpirun -np "$np" --oversubscribe -x MATEX_VIRTUAL_NODES -x ASAN_OPTIONS -x LSAN_OPTIONS \
        -x TSAN_OPTIONS "$binary" > "$out" 2>&1; then
      echo "FAIL: $san engine suite on $np ranks ($nodes)"; tail -40 "$out"; exit 1
    fi
    if grep -q "ERROR: AddressSanitizer\|WARNING: ThreadSanitizer" "$out"; then
      echo "FAIL: $san report on $np ranks ($nodes)"; grep -A30 "ERROR: AddressSanitizer\|WARNING: ThreadSanitizer" "$out" | sed -n 1,60p
      exit 1
    fi
    # Leaks whose stacks pass through libmatexcomm or the tests.
    if awk '/^(Direct|Indirect) leak/{block=""; inblock=1} inblock{block=block"\n"$0} /^$/{if(inblock && block ~ /libmatexcomm\/src\/|\/tests\/mpi\/|\/tests\/unit\/| in matexcomm::| in matex_/){print block; found=1} inblock=0} END{exit !found}' "$out"; then
      echo "FAIL: $san: memory leaked through our code on $np ranks ($nodes)"; exit 1
    fi
    echo "ok: $san engine suite on $np ranks ($nodes)"
    set --
  done
}

MODE=${1:-all}
case "$MODE" in build|run|all) ;; *) echo "usage: $0 [build|run]" >&2; exit 2 ;; esac
if [ "$MODE" != run ]; then
  build build-asan address
  build build-tsan thread
  echo "ok: built build-asan and build-tsan"
fi
[ "$MODE" = build ] && exit 0

ASAN_OPTIONS=detect_leaks=0 build-asan/bin/matex-negotiation-tests > "$LOG/asan-unit.txt"
echo "ok: address negotiation unit tests"
export ASAN_OPTIONS=detect_leaks=1 LSAN_OPTIONS=exitcode=0 TSAN_OPTIONS=
run_layouts build-asan/bin/matex-mpi-engine address

export ASAN_OPTIONS= LSAN_OPTIONS= TSAN_OPTIONS="suppressions=$SUPP_DIR/tsan.supp"
build-tsan/bin/matex-negotiation-tests > "$LOG/tsan-unit.txt"
echo "ok: thread negotiation unit tests"
run_layouts build-tsan/bin/matex-mpi-engine thread
echo "PASS: engine suite clean under AddressSanitizer and ThreadSanitizer"
