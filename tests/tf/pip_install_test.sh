#!/usr/bin/env bash
# pip_install_test.sh BUILD_DIR MPIEXEC PYTHON - installs the package `matex`
# with pip from the repository into a fresh virtual environment,
# BUILD_DIR/tf-venv (it sees the system's TensorFlow), reusing BUILD_DIR's op
# library; then runs the op test on 2 ranks from outside the repository with
# nothing on PYTHONPATH: the installed package must carry everything it needs.
# The environment stays for the MATEX_ENABLE=1 tests (ctest fixture tf_venv).
set -euo pipefail
unset PYTHONPATH
BUILD_DIR=$(cd "$1" && pwd)
MPIEXEC=$2
PYTHON=$3
REPO=$(cd "$(dirname "$0")/../.." && pwd)
VENV=$BUILD_DIR/tf-venv
WORK=$(mktemp -d)
trap 'rm -rf "$WORK" "$REPO/tf_integration/python/build" "$REPO"/tf_integration/python/*.egg-info' EXIT
rm -rf "$VENV"
"$PYTHON" -m venv --system-site-packages "$VENV"
MATEX_BUILD_DIR="$BUILD_DIR" "$VENV/bin/python" -m pip install -q --no-build-isolation \
  "$REPO/tf_integration/python" 2>&1 | grep -v "FutureWarning\|warn(" || true
cd "$WORK"
"$VENV/bin/python" -c 'import matex, os; print("installed at", os.path.dirname(matex.__file__))'
# Without MATEX_ENABLE the startup hook must not even import matex.
env -u MATEX_ENABLE "$VENV/bin/python" -c 'import sys; assert "matex" not in sys.modules, "hook imported matex"'
"$MPIEXEC" -np 2 --oversubscribe "$VENV/bin/python" "$REPO/tests/tf/test_tf_ops.py"
echo "PASS: pip-installed matex runs the op test on 2 ranks; its startup hook is inert without MATEX_ENABLE"
