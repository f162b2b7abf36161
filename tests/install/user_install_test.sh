#!/usr/bin/env bash
# user_install_test.sh BUILD_DIR WHEELHOUSE - a cluster user's install, end to
# end (README "Install on a cluster", docs/install.md). An unprivileged user
# with a fresh virtual environment of the system's Python, the system's MPI
# and nothing else; TensorFlow goes into the environment first, offline from
# WHEELHOUSE (scripts/setup.sh fills it), as the framework the user already
# has. Then, as that user, from outside the repository:
#   1. pip install from a clean copy of the repository (the files git knows:
#      nothing built, no build folder), with MATEX_WITH_TF=1, timed;
#   2. python -m matex doctor must find no problem and name the binding and
#      its XLA lowerings (built: the wheel ships their headers);
#   3. examples/keras_fit_numpy.py trains under python -m matex.verify -np 2,
#      against the plain script on one process;
#   4. a C program builds against the installed package with pkg-config and
#      with find_package(matexcomm), and each runs under mpirun on 2 ranks,
#      using the environment's libmatexcomm.
# The copy and the environment stay in the user's home until the next run.
set -euo pipefail
BUILD_DIR=$(cd "$1" && pwd)
WHEELHOUSE=$(cd "$2" && pwd)
REPO=$(cd "$(dirname "$0")/../.." && pwd)
USER_NAME=matex-user
SYSTEM_PYTHON=${MATEX_TEST_SYSTEM_PYTHON:-/usr/bin/python3}

if [[ $(id -u) -ne 0 ]]; then
  echo "SKIP: making an unprivileged user needs root"
  exit 77
fi
for needed in "$SYSTEM_PYTHON" mpicc mpirun cc cmake pkg-config; do
  command -v "$needed" >/dev/null || { echo "FAIL: $needed is not installed"; exit 1; }
done
compgen -G "$WHEELHOUSE/scikit_build_core-*.whl" >/dev/null && compgen -G "$WHEELHOUSE/tensorflow_cpu-*.whl" >/dev/null ||
  { echo "FAIL: $WHEELHOUSE lacks scikit-build-core or tensorflow-cpu (scripts/setup.sh downloads them)"; exit 1; }

id -u "$USER_NAME" >/dev/null 2>&1 || useradd --create-home --shell /bin/bash "$USER_NAME"
HOME_DIR=$(getent passwd "$USER_NAME" | cut -d: -f6)
WORK=$HOME_DIR/install-test
rm -rf "$WORK"
mkdir -p "$WORK/src" "$WORK/run"
# The clean copy: tracked files, and new ones not ignored (a working tree before its commit).
git -C "$REPO" ls-files -z --cached --others --exclude-standard |
  (cd "$REPO" && xargs -0 -r sh -c 'for f; do [ -e "$f" ] && printf "%s\0" "$f"; done' sh) |
  tar -C "$REPO" --null -T - -cf - | tar -C "$WORK/src" -xf -
chown -R "$USER_NAME": "$WORK"
chmod -R a+rX "$WHEELHOUSE"

as_user() {
  runuser -u "$USER_NAME" -- env -i HOME="$HOME_DIR" USER="$USER_NAME" PATH=/usr/local/bin:/usr/bin:/bin \
    LANG=C.UTF-8 TF_CPP_MIN_LOG_LEVEL=3 OMPI_MCA_rmaps_base_oversubscribe=1 "$@"
}
VENV=$WORK/venv
echo "==== as $USER_NAME (uid $(id -u "$USER_NAME")): a fresh environment of $SYSTEM_PYTHON with TensorFlow"
as_user "$SYSTEM_PYTHON" -m venv "$VENV"
as_user "$VENV/bin/python" -m pip install -q --no-index --find-links "$WHEELHOUSE" "tensorflow-cpu==2.21.*"

echo "==== pip install $WORK/src (MATEX_WITH_TF=1; offline: the wheelhouse has scikit-build-core)"
# Under scripts/test.sh (CCACHE_DIR set) the compilers run through its ccache, with the copy's paths made
# relative (pip's build folder at build/ of the copy, as the test build's is), so that the objects this
# build shares with the test build come from the cache. The user's environment is otherwise empty.
pip_env=()
if [[ -n ${CCACHE_DIR:-} ]]; then
  for name in CCACHE_DIR CCACHE_UMASK CCACHE_SLOPPINESS CMAKE_C_COMPILER_LAUNCHER CMAKE_CXX_COMPILER_LAUNCHER \
              CMAKE_CUDA_COMPILER_LAUNCHER CC CXX CMAKE_GENERATOR CMAKE_BUILD_PARALLEL_LEVEL; do
    [[ -z ${!name:-} ]] || pip_env+=("$name=${!name}")
  done
  pip_env+=(CCACHE_BASEDIR="$WORK/src" SKBUILD_BUILD_DIR=build)
fi
started=$(date +%s)
as_user MATEX_WITH_TF=1 "${pip_env[@]}" "$VENV/bin/python" -m pip install --no-index --find-links "$WHEELHOUSE" \
  "$WORK/src" > "$WORK/pip.log" 2>&1 || { tail -60 "$WORK/pip.log"; echo "FAIL: pip install"; exit 1; }
echo "install (as an unprivileged user, from a clean copy) took $(( $(date +%s) - started )) s" \
  "${CCACHE_DIR:+(through ccache)}" | tee "$BUILD_DIR/install-time-cluster-user.txt"  # scripts/test.sh prints it

echo "==== python -m matex doctor"
cd "$WORK/run"
as_user "$VENV/bin/python" -m matex doctor | tee "$WORK/doctor.txt"
grep -q "binding built for 2.21" "$WORK/doctor.txt" || { echo "FAIL: doctor names no TensorFlow binding"; exit 1; }
grep -q "XLA lowerings *built (jit_compile" "$WORK/doctor.txt" ||
  { echo "FAIL: doctor does not say that the XLA lowerings were built (TensorFlow 2.21 ships their headers)"; exit 1; }
for tool in matexrun matex-topo matex-bench matex-tune; do
  [[ -x $VENV/bin/$tool ]] || { echo "FAIL: the entry point $tool is missing"; exit 1; }
done
as_user "$VENV/bin/matexrun" --check > /dev/null || { echo "FAIL: matexrun --check"; exit 1; }
as_user "$VENV/bin/matex-topo" --print-config > /dev/null || { echo "FAIL: matex-topo from the environment"; exit 1; }

echo "==== examples/keras_fit_numpy.py under matex.verify -np 2"
as_user "$VENV/bin/python" -m matex.verify -np 2 "$WORK/src/examples/keras_fit_numpy.py"

echo "==== C programs against the installed package"
CMAKE_DIR=$(as_user "$VENV/bin/python" -m matex --cmake-dir)
PC_DIR=$(as_user "$VENV/bin/python" -m matex --pkg-config-dir)
LIB_DIR=$(as_user "$VENV/bin/python" -m matex --lib-dir)
source "$REPO/tests/consumer/check_consumer.sh"
as_user cmake -S "$WORK/src/tests/consumer" -B "$WORK/consumer-cmake" -Dmatexcomm_DIR="$CMAKE_DIR" \
  -DCMAKE_BUILD_TYPE=Release > "$WORK/consumer.log" 2>&1 &&
  as_user cmake --build "$WORK/consumer-cmake" >> "$WORK/consumer.log" 2>&1 ||
  { cat "$WORK/consumer.log"; echo "FAIL: find_package(matexcomm) consumer"; exit 1; }
check_consumer "$WORK/consumer-cmake/consumer" "$LIB_DIR" as_user mpirun
flags=$(as_user env PKG_CONFIG_PATH="$PC_DIR" pkg-config --cflags --libs matexcomm)
echo "pkg-config --cflags --libs matexcomm: $flags"
# shellcheck disable=SC2086  # the flags are meant to be split
as_user cc -o "$WORK/run/consumer-pkgconfig" "$WORK/src/tests/consumer/consumer.c" $flags -Wl,-rpath,"$LIB_DIR"
check_consumer "$WORK/run/consumer-pkgconfig" "$LIB_DIR" as_user mpirun
echo "PASS: an unprivileged user installed matex with one pip install and trained, and C programs built against it"
