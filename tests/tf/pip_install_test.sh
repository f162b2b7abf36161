#!/usr/bin/env bash
# pip_install_test.sh BUILD_DIR MPIEXEC PYTHON - installs the package `matex`
# with pip from the repository into a fresh virtual environment (which sees
# the system's TensorFlow), reusing BUILD_DIR's op library, then runs the op
# test on 2 ranks from outside the repository with nothing on PYTHONPATH: the
# installed package must carry everything it needs.
set -euo pipefail
unset PYTHONPATH
BUILD_DIR=$(cd "$1" && pwd)
MPIEXEC=$2
PYTHON=$3
REPO=$(cd "$(dirname "$0")/../.." && pwd)
WORK=$(mktemp -d)
trap 'rm -rf "$WORK" "$REPO/tf_integration/python/build" "$REPO"/tf_integration/python/*.egg-info' EXIT
"$PYTHON" -m venv --system-site-packages "$WORK/venv"
MATEX_BUILD_DIR="$BUILD_DIR" "$WORK/venv/bin/python" -m pip install -q --no-build-isolation \
  "$REPO/tf_integration/python" 2>&1 | grep -v "FutureWarning\|warn(" || true
"$WORK/venv/bin/python" -c 'import matex, os; print("installed at", os.path.dirname(matex.__file__))'
cd "$WORK"
"$MPIEXEC" -np 2 --oversubscribe "$WORK/venv/bin/python" "$REPO/tests/tf/test_tf_ops.py"
echo "PASS: pip-installed matex runs the op test on 2 ranks"
