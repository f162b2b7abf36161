#!/usr/bin/env bash
# write_tracer_test.sh TRACER_LIB CHECKER MPIEXEC PYTHON - the self-test of the
# write tracer (libmatex_write_tracer.so) and of tests/tf/one_writer_check.py,
# without TensorFlow (ctest tf.write_tracer, label unit). Runs 2 ranks under
# the tracer, each writing through Python open, os.open, os.rename, os.mkdir,
# libc fopen (ctypes), a relative path and the *at calls, and checks that the
# log holds every call with its rank and absolute path, and no read; that the
# checker fails on that trace and passes on a run where rank 0 alone writes;
# that --expect-writes fails a trace without writes by rank 0 and --strict one
# with writes from outside mpirun; that a traced call leaves errno alone.
# Open MPI as root needs OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1.
set -uo pipefail
lib=$(realpath "$1") checker=$(realpath "$2") mpiexec=$3 python=$4
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
tmp=$(cd "$tmp" && pwd -P)
unset MATEX_WRITE_TRACE_DIR MATEX_WRITE_TRACE_UNDER
fail() { echo "FAIL: $*"; exit 1; }

# Each rank in WRITERS (argv[2], comma-separated) writes in WORK (argv[1]); every rank reads.
writer='
import ctypes, os, sys
work, writers = sys.argv[1], sys.argv[2].split(",")
rank = os.environ.get("OMPI_COMM_WORLD_RANK", "-")
open(os.path.join(work, "input"), "rb").read()  # a read: never logged
open(os.path.join(os.environ["MATEX_WRITE_TRACE_DIR"], "own." + rank), "w").close()  # the trace dir: never logged
if rank in writers:
    with open(f"{work}/py_open.{rank}", "w") as f:
        f.write(rank)
    fd = os.open(f"{work}/os_open.{rank}", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.close(fd)
    os.rename(f"{work}/os_open.{rank}", f"{work}/renamed.{rank}")
    os.mkdir(f"{work}/dir.{rank}")
    libc = ctypes.CDLL(None)  # the global scope, where the preloaded fopen comes first
    libc.fopen.restype, libc.fopen.argtypes = ctypes.c_void_p, [ctypes.c_char_p, ctypes.c_char_p]
    libc.fclose.argtypes = [ctypes.c_void_p]
    stream = libc.fopen(f"{work}/fopen.{rank}".encode(), b"w")
    assert stream, "fopen failed"
    libc.fclose(stream)
    os.chdir(f"{work}/dir.{rank}")
    open("relative", "w").close()
    dirfd = os.open(work, os.O_RDONLY)
    os.close(os.open(f"at.{rank}", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=dirfd))
    os.unlink(f"at.{rank}", dir_fd=dirfd)
    os.close(dirfd)
    try:
        os.mkdir(f"{work}/dir.{rank}")
        raise SystemExit("mkdir of an existing directory succeeded")
    except FileExistsError:
        pass
print(f"rank {rank} done")
'

# run_ranks NAME WRITERS: 2 ranks under the tracer, writing in $tmp/NAME/work, logging to $tmp/NAME/trace.
run_ranks() {
  mkdir -p "$tmp/$1/work" "$tmp/$1/trace" && echo input > "$tmp/$1/work/input"
  LD_PRELOAD=$lib MATEX_WRITE_TRACE_DIR=$tmp/$1/trace timeout 60 \
    "$mpiexec" -np 2 --oversubscribe "$python" -c "$writer" "$tmp/$1/work" "$2" \
    || fail "the $1 run under the tracer failed"
}

# expect_line TRACE RANK CALLS PATH [PATH2]: a logged call by RANK, one of CALLS (a|b), on PATH.
expect_line() {
  cat "$1"/writes.*.log | awk -F'\t' -v r="$2" -v c="^($3)\$" -v p="$4" -v q="${5-}" \
    '$1 == r && $3 ~ c && $4 == p && (q == "" || $5 == q) { found = 1 } END { exit !found }' \
    || fail "no '$3' of $4 by rank $2 in the trace"
}

# checker_says STATUS ARGS...: runs the checker, shows its output, wants exit status STATUS.
checker_says() {
  local want=$1; shift
  echo "--- one_writer_check.py ${*/#$tmp/\$TMP}"
  "$python" "$checker" "$@"
  local status=$?
  [ "$status" -eq "$want" ] || fail "one_writer_check.py $* exited with $status, not $want"
}

echo "=== a plain Python process under the tracer, without MATEX_WRITE_TRACE_DIR"
LD_PRELOAD=$lib "$python" -c 'import json, tempfile; print("untraced ok")' || fail "Python fails under LD_PRELOAD"

echo "=== errno after a traced call whose log cannot be written"
LD_PRELOAD=$lib MATEX_WRITE_TRACE_DIR=$tmp/missing/parent "$python" -c '
import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
ctypes.set_errno(42)
assert libc.mkdir(sys.argv[1].encode(), 0o755) == 0, "mkdir failed"
assert ctypes.get_errno() == 42, f"errno {ctypes.get_errno()}, not 42"
print("errno kept")
' "$tmp/errno_dir" || fail "errno changed"

echo "=== both ranks write"
run_ranks both 0,1
work=$tmp/both/work
for r in 0 1; do
  expect_line "$tmp/both/trace" $r "open|open64" "$work/py_open.$r"
  expect_line "$tmp/both/trace" $r "open|open64" "$work/os_open.$r"
  expect_line "$tmp/both/trace" $r "rename" "$work/os_open.$r" "$work/renamed.$r"
  expect_line "$tmp/both/trace" $r "mkdir" "$work/dir.$r"
  expect_line "$tmp/both/trace" $r "fopen|fopen64" "$work/fopen.$r"
  expect_line "$tmp/both/trace" $r "open|open64" "$work/dir.$r/relative"
  expect_line "$tmp/both/trace" $r "openat|openat64" "$work/at.$r"
  expect_line "$tmp/both/trace" $r "unlinkat" "$work/at.$r"
done
if grep -q -e "$work/input" -e "$tmp/both/trace" "$tmp"/both/trace/writes.*.log; then
  fail "a read or a write into the trace directory was logged"
fi
[ "$(cat "$tmp"/both/trace/writes.*.log | grep -c "	mkdir	$work/dir\.")" -eq 2 ] || fail "the failed mkdir was logged"
echo "every call is in the trace, with its rank; no read, no failed call"
checker_says 1 "$tmp/both/trace" --under "$work" --expect-writes

echo "=== rank 0 alone writes"
run_ranks rank0 0
checker_says 0 "$tmp/rank0/trace" --under "$tmp/rank0/work" --expect-writes
checker_says 1 "$tmp/rank0/trace" --under "$tmp/rank0/work/nothing_here" --expect-writes

echo "=== a process outside mpirun writes (rank -)"
mkdir -p "$tmp/single/work" "$tmp/single/trace"
LD_PRELOAD=$lib MATEX_WRITE_TRACE_DIR=$tmp/single/trace MATEX_WRITE_TRACE_UNDER=$tmp/single/work \
  "$python" -c 'import sys; open(sys.argv[1], "w").close()' "$tmp/single/work/file" || fail "the single run failed"
expect_line "$tmp/single/trace" - "open|open64" "$tmp/single/work/file"
[ "$(cat "$tmp"/single/trace/writes.*.log | wc -l)" -eq 1 ] || fail "MATEX_WRITE_TRACE_UNDER let other paths through"
checker_says 0 "$tmp/single/trace" --under "$tmp/single/work"
checker_says 1 "$tmp/single/trace" --under "$tmp/single/work" --strict

echo "PASS: the tracer logs every write with its rank; the checker fails other ranks' writes and passes rank 0's"
