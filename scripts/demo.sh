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
cmake --build build -j"$MATEX_JOBS" --target matex-topo matex-allreduce-demo

echo
echo "== matex-topo: 4 ranks, MATEX_VIRTUAL_NODES=2,2 =="
MATEX_VIRTUAL_NODES=2,2 mpirun -np 4 --oversubscribe build/bin/matex-topo
echo
echo "== allreduce on the same layout =="
MATEX_VIRTUAL_NODES=2,2 mpirun -np 4 --oversubscribe build/bin/matex-allreduce-demo

echo
echo "== pip install of the repository into build/venv (an environment that sees this Python's TensorFlow and torch)"
[ -x build/venv/bin/python ] || python3 -m venv --system-site-packages build/venv
build/venv/bin/python -m pip install -q --find-links build/wheelhouse -Cbuild-dir=build/wheel-build .
build/venv/bin/python -m matex doctor

echo
echo "== an unmodified Keras script, data-parallel: MATEX_ENABLE=1 on 2 ranks, then on 4 (2 virtual nodes), against the plain script on 1 process =="
TF_CPP_MIN_LOG_LEVEL=3 build/venv/bin/python -m matex.verify -np 2 --also 4:2,2 examples/keras_fit_numpy.py

echo
echo "== an unmodified PyTorch DDP script (gloo): MATEX_ENABLE=1 on 2 ranks, against the plain script on 1 process =="
build/venv/bin/python tests/torch/compare_plain.py -np 2 examples/torch_ddp_tutorial.py
