#!/usr/bin/env bash
# gpu_check_cpu_test.sh BUILD_DIR - runs bench/gpu/gpu_check.sh on this machine
# without a GPU (MATEX_GPU_CHECK_FORCE_RUN=1, the build directory as it is) for
# the steps added for the GPU machine's second run: the torch backend against
# torch's own backend (here on host tensors, against gloo), the plain round
# trip (--host here), and the CPU section scaled down to 2 ranks (one node and
# 1,1) up to 1 MiB. Then it reads the summary as a person would and fails
# unless every new row is there with its figures parsed: a script that runs
# once a task on a lent machine must not find its parsing broken there.
set -uo pipefail
BUILD_DIR=$(cd "$1" && pwd)
REPO=$(cd "$(dirname "$0")/../.." && pwd)
OUT_DIR=$(mktemp -d)
trap 'rm -rf "$OUT_DIR"' EXIT

OUT=$OUT_DIR MATEX_GPU_SKIP_BUILD=1 MATEX_GPU_BUILD_DIR=$BUILD_DIR MATEX_GPU_CHECK_FORCE_RUN=1 \
  MATEX_GPU_CHECK_STEPS="torch roundtrip cpu" MATEX_GPU_CHECK_CPU_RANKS=2 MATEX_GPU_CHECK_CPU_LAYOUTS=1,1 \
  MATEX_GPU_CHECK_CPU_MAX=1M MATEX_GPU_CHECK_TORCH_MIB=1 MATEX_GPU_CHECK_BUDGET_S=400 \
  bash "$REPO/bench/gpu/gpu_check.sh" >"$OUT_DIR/run.log" 2>&1
rc=$?
summary=$OUT_DIR/gpu_check_summary.md
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
if [[ ! -f "$summary" ]]; then
  tail -40 "$OUT_DIR/run.log"
  echo "FAIL: no summary (exit $rc)"
  exit 1
fi
cat "$summary"
# 0: everything met its targets; 1: something missed one (2 ranks on 2 cores may).
[[ $rc == 0 || $rc == 1 ]] || fail "gpu_check.sh ended with $rc (4: a prerequisite, 5: the build)"

# row <name> <regex over "| name | result | details |">
row() {
  local line
  line=$(grep -F "| $1 |" "$summary" | sed -n 1p)
  if [[ -z "$line" ]]; then fail "no row '$1'"; return; fi
  grep -qE -- "$2" <<<"$line" || fail "row '$1' does not match /$2/: $line"
}
num='[0-9]+\.[0-9]'
row "cuda round trip (2 procs, 1 GPU)" "\| info \| host step of 1 KiB there and back: alone $num+ us, both ranks at once $num+ us; MPI ping-pong $num+ us, with a step on each side $num+ us: hand-over between the processes $num+ us per side"
row "cpu memcpy, 2 ranks at once" "\| info \| $num+ GB/s in all \($num+ per rank; one rank alone $num+\); busbw limit of an allreduce on 2 ranks: $num+ GB/s"
for name in "cpu np2 one node" "cpu np2 1,1"; do
  row "$name" "\| (PASS|FAIL) \| worst speedup against MPI [0-9]+\.[0-9]+x at [0-9]+ (KiB|MiB) \((in|out) of place\); [0-9]+ of [0-9]+ rows below 1.0x; busbw at 1 MiB $num+ GB/s.*; #wrong 0; exit 0"
done
row "cpu np2 one node" "= $num+ % of the limit $num+ GB/s \(target >= 70 %\)"
row "cpu np2 1,1" "= $num+ % of the limit $num+ GB/s; #wrong"
for name in "cpu np2 --compare all" "cpu np2 1,1 --compare all (1-16 KiB)"; do
  row "$name" "\| info \| auto at most [0-9.]+x the fastest algorithm forced, at [0-9]+ B: auto \([a-z_]+\) $num+ us, [a-z_]+ $num+ us, MPI $num+ us; #wrong 0; exit 0"
done
if grep -q torch.ddp <<<"$(ctest --test-dir "$BUILD_DIR" -N -R '^torch\.ddp')"; then
  row "torch np1" "\| PASS \| cpu tensors; [0-9]+ checks \(collectives and a DDP step\) against gloo, 0 wrong; allreduce 1 MiB: matex $num+ us, gloo $num+ us \([0-9.]+x\); allgather 1 MiB: .*; reduce_scatter 1 MiB: .*; exit 0"
  row "torch np2 (1,1)" "\| PASS \| cpu tensors; [0-9]+ checks \(collectives and a DDP step\) against gloo, 0 wrong; allreduce 1 MiB: matex $num+ us"
else
  row "torch np1" "\| FAIL \| not built: this build has no torch backend"
fi
row "overall" "\| (PASS|FAIL) \| exit [01]"
# Steps left out say so in the log, and leave no row.
grep -q "| gpu ctest |" "$summary" && fail "the gpu step ran although MATEX_GPU_CHECK_STEPS left it out"
if (( failures )); then
  echo "--- the run's log (last 60 lines)"
  tail -60 "$OUT_DIR/run.log"
  exit 1
fi
echo "PASS: every new row of gpu_check.sh's summary is there, with its figures"
