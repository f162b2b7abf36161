#!/usr/bin/env bash
# expect_job_error.sh VENV_PYTHON MPIEXEC SCRIPT PATTERN [FORBIDDEN] - runs
# SCRIPT on 2 ranks with MATEX_ENABLE=1 and passes when the job ends promptly
# with a non-zero status, its output contains PATTERN (grep -E) and not
# FORBIDDEN: the failure is reported, not hung on.
set -uo pipefail
unset PYTHONPATH
python=$1 mpiexec=$2 script=$3 pattern=$4 forbidden=${5:-}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
start=$(date +%s)
MATEX_ENABLE=1 timeout 120 "$mpiexec" -np 2 --oversubscribe "$python" "$script" > "$out" 2>&1
status=$?
elapsed=$(( $(date +%s) - start ))
if [ "$status" -eq 0 ] || [ "$status" -eq 124 ] || { [ -n "$forbidden" ] && grep -qE "$forbidden" "$out"; }; then
  cat "$out"; echo "FAIL: exit status $status after ${elapsed}s (0 = not ended, 124 = hung)"; exit 1
fi
grep -qE "$pattern" "$out" || { cat "$out"; echo "FAIL: the output does not say: $pattern"; exit 1; }
echo "PASS: the job ended after ${elapsed}s with status $status, saying: $(grep -oE "$pattern" "$out" | sed -n 1p)"
