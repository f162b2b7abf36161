#!/usr/bin/env bash
# venv_install_test.sh BUILD_DIR MPIEXEC PYTHON WHEELHOUSE - installs the
# repository with pip, as users do (pyproject.toml: one package, both
# bindings), from a source distribution made of it (what pip gets from an
# index), into BUILD_DIR/venv, a virtual environment of PYTHON that sees
# its TensorFlow and torch (--system-site-packages). pip builds in its
# isolated environment (scikit-build-core from WHEELHOUSE, offline), so this
# also checks that the build finds the frameworks of the environment it
# installs into. The environment stays for the
# TensorFlow and PyTorch tests (ctest fixtures tf_venv and torch_venv).
# Then, from outside the repository with nothing on PYTHONPATH:
#   TensorFlow: the startup hook is inert without MATEX_ENABLE (matex is not
#     even imported) and the op test passes on 2 ranks;
#   torch: the entry points are registered, `import torch` loads no native
#     code of ours, init_process_group("matex") works under mpirun with no
#     import of matex_torch and no MASTER_ADDR.
set -euo pipefail
unset PYTHONPATH MASTER_ADDR MASTER_PORT RANK WORLD_SIZE
BUILD_DIR=$(cd "$1" && pwd)
MPIEXEC=$2
PYTHON=$3
WHEELHOUSE=$(cd "$4" && pwd)
REPO=$(cd "$(dirname "$0")/../.." && pwd)
VENV=$BUILD_DIR/venv
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
rm -rf "$VENV"
"$PYTHON" -m venv --system-site-packages "$VENV"
# The sdist, by the build backend (scikit-build-core from the wheelhouse, in a throwaway environment).
"$PYTHON" -m venv "$WORK/sdist-venv"
"$WORK/sdist-venv/bin/python" -m pip install -q --no-index --find-links "$WHEELHOUSE" scikit-build-core
(cd "$REPO" && "$WORK/sdist-venv/bin/python" -c \
  'import sys; from scikit_build_core.build import build_sdist; print("sdist:", build_sdist(sys.argv[1]))' "$WORK/dist")
sdist=$(compgen -G "$WORK/dist/matex-*.tar.gz") || { echo "FAIL: no sdist was made"; exit 1; }
listing=$(tar -tzf "$sdist") || { echo "FAIL: $sdist cannot be read as a gzipped tar"; exit 1; }
if grep -q '^matex-[^/]*/build/' <<<"$listing"; then echo "FAIL: the sdist holds a build folder"; exit 1; fi
# Under scripts/test.sh (CCACHE_DIR set) the compilers run through ccache with the paths of the unpacked
# sdist made relative (its build folder at build/ of it, as the test build's is), so that objects this
# build shares with the test build come from the cache.
pip_env=()
if [[ -n ${CCACHE_DIR:-} ]]; then
  mkdir -p "$WORK/tmp"
  pip_env=(TMPDIR="$WORK/tmp" CCACHE_BASEDIR="$WORK/tmp" SKBUILD_BUILD_DIR=build)
fi
started=$(date +%s)
env "${pip_env[@]}" "$VENV/bin/python" -m pip install --no-index --find-links "$WHEELHOUSE" "$sdist" > "$WORK/pip.log" 2>&1 ||
  { tail -60 "$WORK/pip.log"; echo "FAIL: pip install"; exit 1; }
echo "pip install of $(basename "$sdist") ($(du -k "$sdist" | cut -f1) KiB) took $(( $(date +%s) - started )) s" \
  "${CCACHE_DIR:+(through ccache)}" | tee "$BUILD_DIR/install-time-venv.txt"  # scripts/test.sh prints it
cd "$WORK"
"$VENV/bin/python" -m matex doctor

if "$VENV/bin/python" -c 'import matex, os, sys; sys.exit(not os.path.exists(os.path.join(os.path.dirname(matex.__file__), "_matex_ops.so")))'; then
  # Without MATEX_ENABLE the startup hook must not even import matex.
  env -u MATEX_ENABLE "$VENV/bin/python" -c 'import sys; assert "matex" not in sys.modules, "hook imported matex"'
  "$MPIEXEC" -np 2 --oversubscribe "$VENV/bin/python" "$REPO/tests/tf/test_tf_ops.py"
  echo "PASS: the TensorFlow binding: op test on 2 ranks; the startup hook is inert without MATEX_ENABLE"
else
  echo "the TensorFlow binding was not built here (see the doctor's line)"
fi

if compgen -G "$VENV/lib/python*/site-packages/matex_torch/_matex_torch*.so" > /dev/null; then
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
  echo "PASS: the PyTorch binding registers through its entry point and needs no MASTER_ADDR under mpirun"
else
  echo "the PyTorch binding was not built here (see the doctor's line)"
fi
