#!/usr/bin/env bash
# one_writer_verify.sh VENV_PYTHON TRACER_LIB CHECKER VERIFY_ARGS... - runs
# `python -m matex.verify VERIFY_ARGS` with the write tracer preloaded
# (tests/tf/write_tracer) into every process, then checks its logs: in the runs'
# own directories (matex.verify gives each run one, under TMPDIR) no MPI rank
# other than 0 created, wrote, renamed or removed a file, and rank 0 did write.
# The plain runs' processes are not MPI ranks and do not count.
set -uo pipefail
python=$1 tracer=$2 checker=$3
shift 3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/tmp" "$work/trace"
TMPDIR="$work/tmp" LD_PRELOAD="$tracer" MATEX_WRITE_TRACE_DIR="$work/trace" "$python" -m matex.verify "$@" || exit 1
# Only the runs' directories: Open MPI's session files under TMPDIR are written by every rank.
"$python" "$checker" "$work/trace" --under "$work/tmp/matex-verify-" --expect-writes
