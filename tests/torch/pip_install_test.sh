#!/usr/bin/env bash
# pip_install_test.sh BUILD_DIR MPIEXEC PYTHON - installs matex_torch with pip
# from the repository into a fresh virtual environment, BUILD_DIR/torch-venv
# (it sees the system's torch), reusing BUILD_DIR's extension; then, from
# outside the repository with nothing on PYTHONPATH, checks that the entry
# points work: init_process_group("matex") with no import of matex_torch and
# no MASTER_ADDR under mpirun, and that `import torch` loads no native code of
# ours. The environment stays for the other torch tests (fixture torch_venv).
set -euo pipefail
unset PYTHONPATH MASTER_ADDR MASTER_PORT RANK WORLD_SIZE
BUILD_DIR=$(cd "$1" && pwd)
MPIEXEC=$2
PYTHON=$3
REPO=$(cd "$(dirname "$0")/../.." && pwd)
VENV=$BUILD_DIR/torch-venv
WORK=$(mktemp -d)
trap 'rm -rf "$WORK" "$REPO/torch_integration/python/build" "$REPO"/torch_integration/python/*.egg-info' EXIT
rm -rf "$VENV"
"$PYTHON" -m venv --system-site-packages "$VENV"
MATEX_BUILD_DIR="$BUILD_DIR" "$VENV/bin/python" -m pip install -q --no-build-isolation --no-deps \
  "$REPO/torch_integration/python" 2>&1 | grep -v "FutureWarning\|warn(" || true
cd "$WORK"
"$VENV/bin/python" - <<'PY'
import sys
import torch
from importlib.metadata import entry_points
names = [e.name for e in entry_points(group="torch.distributed.backends")]
assert "matex" in names, names
assert "matex_torch._matex_torch" not in sys.modules, "import torch loaded the extension"
print("entry points:", names)
PY
cat > "$WORK/plain_init.py" <<'PY'
import torch
import torch.distributed as dist
dist.init_process_group("matex")
t = torch.full((5,), float(dist.get_rank() + 1))
dist.all_reduce(t)
n = dist.get_world_size()
assert torch.equal(t, torch.full((5,), n * (n + 1) / 2.0)), t
assert dist.get_backend() == "matex"
assert dist.group.WORLD._get_backend(torch.device("cpu")).name() == "matex"
dist.destroy_process_group()
print("rank", dist.get_rank() if dist.is_initialized() else "-", "ok")
PY
"$MPIEXEC" -np 2 --oversubscribe "$VENV/bin/python" "$WORK/plain_init.py"
echo "PASS: pip-installed matex_torch registers through its entry point and needs no MASTER_ADDR under mpirun"
