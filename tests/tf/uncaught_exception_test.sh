#!/usr/bin/env bash
# uncaught_exception_test.sh VENV_PYTHON MPIEXEC - an uncaught exception on one
# rank ends the whole job promptly (MATEX_ENABLE=1 installs the excepthook).
set -uo pipefail
unset PYTHONPATH
HERE=$(cd "$(dirname "$0")" && pwd)
start=$(date +%s)
MATEX_ENABLE=1 timeout 120 "$2" -np 2 --oversubscribe "$1" "$HERE/uncaught_exception.py" > /tmp/matex-uncaught.$$ 2>&1
status=$?
elapsed=$(( $(date +%s) - start ))
if [ "$status" -eq 0 ] || [ "$status" -eq 124 ] || grep -q "rank 0 finished" /tmp/matex-uncaught.$$; then
  cat /tmp/matex-uncaught.$$; rm -f /tmp/matex-uncaught.$$
  echo "FAIL: exit status $status after ${elapsed}s (0 = not ended, 124 = hung)"; exit 1
fi
grep -q "ends the job after an uncaught RuntimeError" /tmp/matex-uncaught.$$ || {
  cat /tmp/matex-uncaught.$$; rm -f /tmp/matex-uncaught.$$; echo "FAIL: no message naming the rank"; exit 1; }
rm -f /tmp/matex-uncaught.$$
echo "PASS: the job ended after ${elapsed}s with status $status and said which rank gave up"
