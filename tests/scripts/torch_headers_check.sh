#!/usr/bin/env bash
# torch_headers_check.sh TORCH_DIR [SOURCE...] - compiles every source (or those named) of the PyTorch
# backend (torch_integration/csrc) against another torch's headers, without
# linking: does the backend build against that release? TORCH_DIR is a torch
# package folder (site-packages/torch, or the torch/ of an unzipped wheel:
#   pip download --no-deps torch==2.11.0 -d /tmp/t && unzip -q /tmp/t/torch-*.whl 'torch/include/*' -d /tmp/t).
# Not in CI (it needs a second torch); run it when the supported range changes
# (cmake/MatexTorch.cmake, csrc/torch_compat.h). Uses C++20, the CXX11 ABI and
# the defines of torch_integration/CMakeLists.txt.
set -euo pipefail
torch_dir=${1:?usage: torch_headers_check.sh TORCH_DIR}
root=$(cd "$(dirname "$0")/../.." && pwd)
version=$(sed -n 's/^#define TORCH_VERSION_\(MAJOR\|MINOR\|PATCH\) \([0-9]*\)/\2/p' \
  "$torch_dir/include/torch/headeronly/version.h" | paste -sd.)
python_include=$(python3 -c "import sysconfig; print(sysconfig.get_paths()['include'])")
mpi_flags=$(mpicc --showme:compile 2>/dev/null || mpicc -show | cut -d' ' -f2-)
failed=0
sources=("${@:2}")
[ ${#sources[@]} -gt 0 ] || sources=("$root"/torch_integration/csrc/*.cc)
for source in "${sources[@]}"; do
  if ! g++ -std=c++20 -fsyntax-only -D_GLIBCXX_USE_CXX11_ABI=1 -DTORCH_EXTENSION_NAME=_matex_torch \
      -DTORCH_API_INCLUDE_EXTENSION_H -DOMPI_SKIP_MPICXX=1 -Wno-unused-parameter \
      -I"$root/libmatexcomm/include" -isystem "$torch_dir/include" \
      -isystem "$torch_dir/include/torch/csrc/api/include" -isystem "$python_include" $mpi_flags \
      "$source" 2> /tmp/torch_headers_check.err; then
    echo "FAIL: $(basename "$source") against torch $version:"; head -20 /tmp/torch_headers_check.err
    failed=$((failed + 1))
  else
    echo "ok: $(basename "$source")"
  fi
done
[ "$failed" -eq 0 ] && echo "PASS: torch_integration/csrc compiles against torch $version" || exit 1
