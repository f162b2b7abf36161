#!/usr/bin/env bash
# Sets up, builds everything with tests, and runs every test (unit, multi-rank
# in every layout, crash/no-leak, find_package consumer), then the engine suite
# under AddressSanitizer and ThreadSanitizer. CI runs exactly this.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh

cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DMATEX_BUILD_TESTS=ON -DMATEX_WITH_TF=ON -DMATEX_TF_GPU_KERNELS=ON -DMATEX_WITH_TORCH=ON
cmake --build build -j"$MATEX_JOBS"
cd build
# Serial: the multi-rank tests already put 4 ranks on this machine's cores.
ctest --output-on-failure --timeout 900
cd ..
tests/sanitizers/run.sh
