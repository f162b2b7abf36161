#!/usr/bin/env bash
# torch_import_order_test.sh - libmatexcomm and PyTorch in one process, in
# both load orders. torch's wheel bundles an NCCL under the same soname as
# the system one (libnccl.so.2); libmatexcomm must not pull the system copy
# in at load time, or `import torch` afterwards fails on a missing symbol.
# Also checks that the library does not link NCCL at all.
#
# usage: torch_import_order_test.sh <path of libmatexcomm.so>   (env PYTHON: default python3)
# Exit 77 (skipped) when $PYTHON cannot import torch.
set -u

LIB=${1:?usage: torch_import_order_test.sh <path of libmatexcomm.so>}
PYTHON=${PYTHON:-python3}

if ! "$PYTHON" -c "import torch" >/dev/null 2>&1; then
  echo "SKIPPED: $PYTHON cannot import torch"
  exit 77
fi

status=0
if ldd "$LIB" | grep -i nccl; then
  echo "FAIL: $LIB links NCCL (above)"
  status=1
fi

run() {
  local name=$1 code=$2
  if MATEX_LIB=$LIB "$PYTHON" -c "$code"; then
    echo "ok: $name"
  else
    echo "FAIL: $name"
    status=1
  fi
}

run "libmatexcomm, then import torch" \
  "import ctypes, os; ctypes.CDLL(os.environ['MATEX_LIB'], mode=ctypes.RTLD_GLOBAL); import torch"
run "import torch, then libmatexcomm" \
  "import ctypes, os, torch; ctypes.CDLL(os.environ['MATEX_LIB'], mode=ctypes.RTLD_GLOBAL)"
exit $status
