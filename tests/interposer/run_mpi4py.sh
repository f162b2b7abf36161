#!/usr/bin/env bash
# run_mpi4py.sh <sdist.tar.gz> <work dir> <ranks> <interposer> <skip> [run_interposed.py checks...]
# Runs mpi4py's own test suite (test/main.py of its source distribution,
# against the installed mpi4py) under the interposer with
# MATEX_INTERPOSE=all. The spawn tests are left out, as mpi4py's own CI does
# (tox.ini: -e spawn): under Open MPI 4.1 they take ~10 minutes and fail at
# random with MPI_ERR_UNKNOWN, interposer or not. <skip> is a regular
# expression of more test modules to leave out, or - for none; a skip that
# starts with + names the only modules to run instead (e.g. +test_cco_).
# MATEX_MPIRUN replaces mpirun (tests/cluster/mpirun_on_hosts.sh: the testbed).
set -euo pipefail
sdist=$1 work=$2 ranks=$3 interposer=$4 skip=$5
shift 5
excluded=(-e spawn)
case $skip in
  -) ;;
  +*) excluded+=(-i "${skip#+}") ;;
  *) excluded+=(-e "$skip") ;;
esac
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$work"
tar -xzf "$sdist" -C "$work"
suite=$(echo "$work"/mpi4py-*/test)
cd "$suite/.."
# The interpreter itself, not "python3": on other hosts mpirun's PATH may find another one first.
python=$(python3 -c 'import sys; print(sys.executable)')
exec python3 "$here/run_interposed.py" --interposer "$interposer" "$@" -- \
  "${MATEX_MPIRUN:-mpirun}" -np "$ranks" --oversubscribe -x MATEX_INTERPOSE=all "$python" test/main.py -q "${excluded[@]}"
