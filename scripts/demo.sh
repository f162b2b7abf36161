#!/usr/bin/env bash
# The demo: set up, build, then show 4 ranks in 2 virtual nodes (matex-topo),
# a checked allreduce with every algorithm on them, and an unmodified Keras
# script trained with MATEX_ENABLE=1 on those 4 ranks, step by step against
# the same script run plainly on one process (python -m matex.verify), and
# an unmodified PyTorch DDP script on the matex backend the same way.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh

cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DMATEX_WITH_TF=ON -DMATEX_WITH_TORCH=ON >/dev/null
cmake --build build -j"$MATEX_JOBS" --target matex-topo matex-allreduce-demo matex_python_package matex_torch_package

echo
echo "== matex-topo: 4 ranks, MATEX_VIRTUAL_NODES=2,2 =="
MATEX_VIRTUAL_NODES=2,2 mpirun -np 4 --oversubscribe build/bin/matex-topo
echo
echo "== allreduce on the same layout =="
MATEX_VIRTUAL_NODES=2,2 mpirun -np 4 --oversubscribe build/bin/matex-allreduce-demo

echo
echo "== an unmodified Keras script, data-parallel: MATEX_ENABLE=1 on 2 ranks, then on 4 (2 virtual nodes), against the plain script on 1 process =="
if [ ! -x build/tf-venv/bin/python ]; then
  python3 -m venv --system-site-packages build/tf-venv
fi
MATEX_BUILD_DIR=build build/tf-venv/bin/python -m pip install -q --no-build-isolation --force-reinstall --no-deps \
  ./tf_integration/python 2>&1 | grep -v "FutureWarning\|warn(" || true
rm -rf tf_integration/python/build tf_integration/python/*.egg-info
TF_CPP_MIN_LOG_LEVEL=3 build/tf-venv/bin/python -m matex.verify -np 2 --also 4:2,2 examples/keras_fit_numpy.py

echo
echo "== an unmodified PyTorch DDP script (gloo): MATEX_ENABLE=1 on 2 ranks, against the plain script on 1 process =="
if [ ! -x build/torch-venv/bin/python ]; then
  python3 -m venv --system-site-packages build/torch-venv
fi
MATEX_BUILD_DIR=build build/torch-venv/bin/python -m pip install -q --no-build-isolation --force-reinstall --no-deps \
  ./torch_integration/python 2>&1 | grep -v "FutureWarning\|warn(" || true
rm -rf torch_integration/python/build torch_integration/python/*.egg-info
build/torch-venv/bin/python tests/torch/compare_plain.py -np 2 examples/torch_ddp_tutorial.py
