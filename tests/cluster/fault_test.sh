#!/usr/bin/env bash
# Faults across the testbed's hosts, one per run. Every rank must end within MATEX_TIMEOUT_SECONDS of the
# fault with an error naming the host at fault, the job must end (no hang), no rank may be left running,
# and no host's /dev/shm may keep a segment. Prints each rank's error and the seconds it took to end.
#
#   fault_test.sh link_down KILL_TARGET  3 hosts x 1 rank; h3's link goes down mid-allreduce (64 MiB)
#   fault_test.sh kill_host KILL_TARGET  2 hosts x 2 ranks; every rank on h2 gets SIGKILL mid-allreduce
#   fault_test.sh slow_link BENCH        3 hosts x 1 rank; h3's link at 100 Mbit/s: results stay right,
#                                        and the stall warnings name h3
# Exit 77 (a skip) with the reason where no testbed is up.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
testbed=$here/testbed.sh
mode=${1:?"fault_test.sh: give link_down, kill_host or slow_link"}
program=${2:?"fault_test.sh: give the program to run"}
timeout_s=15
case $mode in
  link_down) hosts=3 slots=1 ;;
  kill_host) hosts=2 slots=2 ;;
  slow_link) hosts=3 slots=1 ;;
  *) echo "fault_test.sh: unknown fault '$mode'" >&2; exit 2 ;;
esac
if ! host_list=$("$testbed" hosts "$slots" "$hosts" 2>/dev/null); then
  why=$("$testbed" check | sed 's/^SKIP: //')
  [[ $why == ok:* ]] && why="no testbed of $hosts hosts is up (the fixture cluster.up failed: see its output)"
  echo "SKIP: $why"
  exit 77
fi
ranks=$((hosts * slots))
work=$(mktemp -d)
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
now() { date +%s.%N; }
seconds() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.1f", b - a}'; }

# Whether PID is a rank: a process that MPI started (this script's own command line names the program too).
is_rank() { grep -qz '^OMPI_COMM_WORLD_RANK=' "/proc/$1/environ" 2>/dev/null; }
cleanup() {
  "$testbed" link h3 up 2>/dev/null
  "$testbed" shape h3 none 2>/dev/null
  for pid in $(pgrep -f "$program"); do is_rank "$pid" && kill -KILL "$pid" 2>/dev/null; done
  rm -rf "$work"
}
trap cleanup EXIT

mapfile -t mpirun_args < <("$testbed" mpirun-args)
unset MATEX_VIRTUAL_NODES
export MATEX_TIMEOUT_SECONDS=$timeout_s MATEX_STALL_WARNING_SECONDS=${MATEX_STALL_WARNING_SECONDS:-3}
[[ $mode == slow_link ]] && { export MATEX_STALL_WARNING_SECONDS=1 MATEX_TIMEOUT_SECONDS=60; "$testbed" shape h3 100mbit; }
args=("$work/markers" 100)
[[ $mode == slow_link ]] && args=(-b 32M -e 32M -n 2 -w 1)
mkdir -p "$work/markers"
echo "# $mode: mpirun on $hosts testbed hosts x $slots (--host $host_list), MATEX_TIMEOUT_SECONDS=$MATEX_TIMEOUT_SECONDS"
start=$(now)
"$testbed" launch timeout -s KILL 120 "${MPIEXEC:-mpirun}" "${mpirun_args[@]}" --output-filename "$work/out" \
  --host "$host_list" -np "$ranks" "$program" "${args[@]}" > "$work/mpirun.log" 2>&1 &
job=$!

# Whether PID runs (a zombie has ended: its host's init reaps it in time).
alive() { [[ -r /proc/$1/stat ]] && [[ $(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) != Z ]]; }
# The ranks' process ids as this machine sees them (their hosts' PID namespaces number them otherwise).
declare -A pid_of
find_ranks() {
  local pid rank
  for pid in $(pgrep -f "$program"); do
    rank=$(tr '\0' '\n' < "/proc/$pid/environ" 2>/dev/null | sed -n 's/^OMPI_COMM_WORLD_RANK=//p')
    [[ -n $rank ]] && pid_of[$rank]=$pid
  done
}

fault_at=""
if [[ $mode != slow_link ]]; then
  for ((i = 0; i < 300; ++i)); do
    [[ $(ls "$work/markers" | grep -c '^started') -eq $ranks ]] && break
    kill -0 "$job" 2>/dev/null || break
    sleep 0.2
  done
  find_ranks
  ((${#pid_of[@]} == ranks)) || fail "found ${#pid_of[@]} of $ranks ranks running before the fault"
  sleep 1  # in the middle of an allreduce
  fault_at=$(now)
  if [[ $mode == link_down ]]; then
    "$testbed" link h3 down
    echo "# h3's link went down at $(seconds "$start" "$fault_at") s"
  else
    "$testbed" exec h2 pkill -KILL -f "$(basename "$program")"
    echo "# every rank on h2 got SIGKILL at $(seconds "$start" "$fault_at") s"
  fi
  # When each rank ends, seen from here.
  declare -A ended
  while kill -0 "$job" 2>/dev/null || ((${#ended[@]} < ${#pid_of[@]})); do
    for rank in "${!pid_of[@]}"; do
      [[ -z ${ended[$rank]:-} ]] && ! alive "${pid_of[$rank]}" && ended[$rank]=$(now)
    done
    awk -v t="$(seconds "$fault_at" "$(now)")" 'BEGIN {exit !(t > 100)}' && break
    sleep 0.1
  done
fi
wait "$job"
status=$?
job_end=$(now)
echo "# mpirun ended with status $status after $(seconds "$start" "$job_end") s"
sed 's/^/  mpirun: /' "$work/mpirun.log" | grep -v '^  mpirun: *$' | sed -n 1,40p

stderr_of() { cat "$work"/out/*/rank."$1"/stderr 2>/dev/null; }
host_of_rank() { echo "h$(($1 / slots + 1))"; }

case $mode in
  link_down)
    [[ $status -ne 0 ]] || fail "the job succeeded although h3 lost its link"
    for ((r = 0; r < ranks; ++r)); do
      took=$(seconds "$fault_at" "${ended[$r]:-$job_end}")
      error=$(stderr_of "$r" | grep 'MATEX_TIMEOUT_SECONDS' | grep 'Ending the job' | sed -n 1p)
      echo "rank $r ($(host_of_rank "$r")) ended $took s after the link went down: ${error:-<no error>}"
      [[ -n $error ]] || fail "rank $r printed no timeout error"
      if [[ $(host_of_rank "$r") == h3 ]]; then
        [[ $error == *"this host (h3) reaches none of the other hosts"* ]] || fail "rank $r does not name its own host"
      else
        [[ $error == *"h3 (rank 2) does not answer while the other hosts do"* ]] || fail "rank $r does not name h3"
      fi
      # The clock ran from the allreduce's start, before the fault; then come a grace period and the
      # teardown on hosts that share 2 cores: 7 s of slack, well below a second timeout.
      awk -v t="$took" -v l="$timeout_s" 'BEGIN {exit !(t <= l + 7)}' ||
        fail "rank $r took $took s to end (MATEX_TIMEOUT_SECONDS=$timeout_s)"
    done
    # mpirun hears of h3's loss when the head's TCP gives up on it (testbed.sh: about 6 s).
    awk -v t="$(seconds "$fault_at" "$job_end")" -v l="$timeout_s" 'BEGIN {exit !(t <= l + 30)}' ||
      fail "the job hung: mpirun ended $(seconds "$fault_at" "$job_end") s after the fault"
    # The daemon on h3 cannot hear that the job ended until its link returns; then it leaves.
    "$testbed" link h3 up
    for ((i = 0; i < 100; ++i)); do pgrep -x orted > /dev/null || break; sleep 0.2; done
    pgrep -x orted > /dev/null && fail "an Open MPI daemon was still running 20 s after h3's link returned"
    ;;
  kill_host)
    [[ $status -ne 0 ]] || fail "the job succeeded although h2's ranks were killed"
    grep -q "10.77.0.12.*signal 9\|signal 9.*10.77.0.12\|on node 10.77.0.12 exited on signal 9" "$work/mpirun.log" ||
      fail "mpirun's report does not name h2 (10.77.0.12) and the signal"
    for ((r = 0; r < ranks; ++r)); do
      took=$(seconds "$fault_at" "${ended[$r]:-$job_end}")
      echo "rank $r ($(host_of_rank "$r")) ended $took s after the kill"
      # mpirun ends them about a second after the kill; the library's own timeout would take until
      # MATEX_TIMEOUT_SECONDS, a grace period and the teardown on busy cores: 7 s of slack.
      awk -v t="$took" -v l="$timeout_s" 'BEGIN {exit !(t <= l + 7)}' ||
        fail "rank $r took $took s to end (MATEX_TIMEOUT_SECONDS=$timeout_s)"
    done
    ;;
  slow_link)
    [[ $status -eq 0 ]] || fail "matex-bench failed on a slow link (status $status)"
    grep -q "Out of bounds values : 0 OK" "$work/mpirun.log" || fail "matex-bench found wrong results"
    for ((r = 0; r < ranks; ++r)); do
      warnings=$(stderr_of "$r" | grep 'MATEX_STALL_WARNING_SECONDS')
      echo "rank $r ($(host_of_rank "$r")) warned:"; sed 's/^/    /' <<< "${warnings:-<nothing>}"
      if [[ $(host_of_rank "$r") == h3 ]]; then
        grep -q "this host's (h3) own link" <<< "$warnings" || fail "rank $r never names its own (slow) link"
      else
        grep -q "h3 (rank 2) answers slowly" <<< "$warnings" || fail "rank $r never names h3 as slow"
      fi
    done
    ;;
esac

for pid in $(pgrep -f "$program"); do
  is_rank "$pid" || continue
  alive "$pid" && fail "a process of $(basename "$program") was still running after the job: $(tr '\0' ' ' < /proc/$pid/cmdline)"
done
for host in $("$testbed" status | awk '{print $1}'); do
  left=$("$testbed" exec "$host" ls -A /dev/shm)
  [[ -z $left ]] || fail "host $host kept shared-memory segments: $left"
  "$testbed" exec "$host" sh -c 'rm -rf /dev/shm/* /dev/shm/.[!.]*' 2>/dev/null
done
((failures == 0)) && echo "PASS: $mode"
exit $((failures > 0))
