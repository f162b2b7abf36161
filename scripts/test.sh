#!/usr/bin/env bash
# Sets up, builds everything with tests, and runs every test (unit, multi-rank
# in every layout, crash/no-leak, find_package consumer), then the engine suite
# under AddressSanitizer and ThreadSanitizer. CI runs exactly this.
set -euo pipefail
cd "$(dirname "$0")/.."
# Where CI's time goes: each phase's wall time, printed as it ends (and once more at the end).
phase_started=$SECONDS phase_times=""
phase_done() {
  local line="phase: $1 took $((SECONDS - phase_started)) s (total $SECONDS s)"
  echo "$line"; phase_times+="$line"$'\n'; phase_started=$SECONDS
}
source scripts/setup.sh
phase_done "setup"

# The install tests (tests/install) compile the library and the TensorFlow op library twice more: pip
# from an sdist, and an unprivileged user's pip from a clean copy. Through ccache, with every path made
# relative to its source tree (each test sets CCACHE_BASEDIR and puts pip's build folder at build/ of the
# tree, as this build's is), one compiler name and one generator everywhere, they reuse this build's
# objects wherever the inputs are the same: a compiler that a cache hit stands in for would have
# produced the same object. The cache is this build folder's own. Make, not Ninja (which pip would pick):
# on this 2-core machine Ninja's -j2 took 324 s for this build, Make's 265 s.
if command -v ccache >/dev/null; then
  export CCACHE_DIR=$PWD/build/ccache CCACHE_UMASK=000 CCACHE_BASEDIR=$PWD
  export CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime
  export CMAKE_C_COMPILER_LAUNCHER=ccache CMAKE_CXX_COMPILER_LAUNCHER=ccache CMAKE_CUDA_COMPILER_LAUNCHER=ccache
  export CC=gcc CXX=g++  # the names scikit-build-core takes from Python; ccache hashes the compiler's name
  export CMAKE_GENERATOR="Unix Makefiles" CMAKE_BUILD_PARALLEL_LEVEL=$MATEX_JOBS  # pip's builds too
  if [[ -f build/CMakeCache.txt ]]; then  # an existing build folder keeps the generator it was made with
    CMAKE_GENERATOR=$(sed -n 's/^CMAKE_GENERATOR:INTERNAL=//p' build/CMakeCache.txt)
  fi
  ccache --zero-stats >/dev/null
fi
# The PyTorch extension is compiled once, by install.venv's pip install (the torch tests run that build);
# -DMATEX_TORCH_IN_BUILD_TREE=OFF keeps a second copy out of this tree's build.
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DMATEX_BUILD_TESTS=ON -DMATEX_WITH_TF=ON \
  -DMATEX_TF_GPU_KERNELS=ON -DMATEX_WITH_TORCH=ON -DMATEX_TORCH_IN_BUILD_TREE=OFF
cmake --build build -j"$MATEX_JOBS"
phase_done "configure and build"
# No tuning file of this machine's user (~/.cache/matex) may steer auto in a test.
export XDG_CACHE_HOME="$PWD/build/no-tuning-cache"
# Serial: the multi-rank tests already put 4 ranks on this machine's cores.
# First everything but TensorFlow, alone: those tests make thousands of small
# collectives, and compilers beside them, even at idle priority, slowed them
# 2-2.5x (mpi4py at 2 ranks: 57 s alone, 138 s beside the sanitizer build).
(cd build && ctest --output-on-failure --timeout 900 -LE tf)
phase_done "tests without TensorFlow"
# How long pip took in the install tests (tests/install), which pass quietly, and what ccache saved.
cat build/install-time-*.txt 2>/dev/null || true
[[ -z ${CCACHE_DIR:-} ]] || ccache --show-stats | grep -E "Hits|Misses" || true
# Then the TensorFlow tests, while the sanitizer trees build at idle priority
# (SCHED_IDLE: only on core time the tests leave unused). They slow these
# tests too (about 1.7x while they build), but these make few collectives, and
# a timeout here is less likely. The build is small: the engine suite and the
# negotiation tests only. Its own process group, so that a failing run stops
# the compilers too.
setsid chrt --idle 0 tests/sanitizers/run.sh build > build/sanitizer-build.log 2>&1 &
sanitizer_build=$!
trap 'kill -0 "$sanitizer_build" 2>/dev/null && kill -- -"$sanitizer_build" 2>/dev/null; true' EXIT
cd build
# -FA: the environment the first pass installed (tests/install, fixtures
# tf_venv and torch_venv) serves these too; no second pip install.
ctest --output-on-failure --timeout 900 -L tf -FA 'tf_venv|torch_venv'
cd ..
phase_done "TensorFlow tests"
if ! wait "$sanitizer_build"; then
  echo "FAIL: building the sanitizer trees (build/sanitizer-build.log):"; tail -40 build/sanitizer-build.log; exit 1
fi
trap - EXIT
phase_done "waiting for the sanitizer trees"
tests/sanitizers/run.sh run
phase_done "sanitizer runs"
printf '%s' "$phase_times"
