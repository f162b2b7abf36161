#!/usr/bin/env bash
# kill_rank_test.sh - SIGKILL one rank of a 4-rank job in the middle of large
# rs_ar_ag allreduces (MATEX_VIRTUAL_NODES=2,2) and check that
#   1. mpirun exits within 60 s of the kill (else its process group is killed
#      and the test FAILS),
#   2. no rank of the job is still alive afterwards,
#   3. no /dev/shm/matex-<uid>-<pid>-* segment of any rank of the job is left
#      (any other matex-* segment present is reported).
#
# usage: kill_rank_test.sh <mpiexec> <matex-kill-target> [victim world rank, default 2]
set -u

MPIEXEC=${1:?usage: kill_rank_test.sh <mpiexec> <matex-kill-target> [victim rank]}
TARGET=${2:?usage: kill_rank_test.sh <mpiexec> <matex-kill-target> [victim rank]}
VICTIM=${3:-2}
RANKS=4
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export MATEX_VIRTUAL_NODES=2,2
export MATEX_TIMEOUT_SECONDS=20  # shm waits give up well within the 60 s budget

WORK=$(mktemp -d /tmp/matex-kill-XXXXXX)
LOG=$WORK/mpirun.log
status=0
fail() { echo "FAIL: $*"; status=1; }

# setsid: mpirun leads its own process group, so it can be killed as a whole.
setsid "$MPIEXEC" -np $RANKS --oversubscribe "$TARGET" "$WORK" 150 >"$LOG" 2>&1 &
MPIRUN_PID=$!
echo "mpirun pid $MPIRUN_PID, work dir $WORK"

kill_group() { kill -KILL -- "-$MPIRUN_PID" 2>/dev/null; }

# Wait (up to 120 s) until every rank has finished its first allreduce.
started=0
for _ in $(seq 1 1200); do
  started=$(ls "$WORK" | grep -c '^started\.' || true)
  [ "$started" -eq $RANKS ] && break
  if ! kill -0 $MPIRUN_PID 2>/dev/null; then break; fi
  sleep 0.1
done
if [ "$started" -ne $RANKS ]; then
  fail "only $started of $RANKS ranks started"
  kill_group
  cat "$LOG"
  rm -rf "$WORK"
  exit 1
fi

PIDS=()
for r in $(seq 0 $((RANKS - 1))); do PIDS+=("$(cat "$WORK/pid.$r")"); done
echo "rank pids: ${PIDS[*]}"

sleep 1  # let the ranks get into the middle of the next allreduces
victim_pid=${PIDS[$VICTIM]}
echo "SIGKILL world rank $VICTIM (pid $victim_pid)"
kill -KILL "$victim_pid" || fail "could not kill pid $victim_pid"
killed_at=$(date +%s)

# 1. mpirun must exit within 60 s.
if timeout 60 tail --pid=$MPIRUN_PID -f /dev/null; then
  wait $MPIRUN_PID
  rc=$?
  echo "mpirun exited with status $rc after $(( $(date +%s) - killed_at )) s"
  [ "$rc" -ne 0 ] || fail "mpirun reported success although a rank was killed"
else
  fail "mpirun still running 60 s after the kill; killing its process group"
  kill_group
  wait $MPIRUN_PID 2>/dev/null
fi

# 2. No rank may survive (allow a few seconds for the last ones to go).
for _ in $(seq 1 50); do
  alive=()
  for pid in "${PIDS[@]}"; do kill -0 "$pid" 2>/dev/null && alive+=("$pid"); done
  [ ${#alive[@]} -eq 0 ] && break
  sleep 0.1
done
if [ ${#alive[@]} -ne 0 ]; then
  fail "ranks still alive after mpirun exited: ${alive[*]}"
  for pid in "${alive[@]}"; do kill -KILL "$pid" 2>/dev/null; done
fi

# 3. No shared-memory segment created by a rank of this job.
uid=$(id -u)
for pid in "${PIDS[@]}"; do
  leaked=$(ls /dev/shm 2>/dev/null | grep "^matex-$uid-$pid-" || true)
  [ -z "$leaked" ] || fail "segment(s) of pid $pid left behind: $leaked"
done
others=$(ls /dev/shm 2>/dev/null | grep '^matex-' || true)
[ -z "$others" ] || echo "note: other matex-* segments present in /dev/shm: $others"

echo "---- mpirun output ----"
cat "$LOG"
rm -rf "$WORK"
[ $status -eq 0 ] && echo "PASS: job ended promptly after the kill and left no segment"
exit $status
