#!/usr/bin/env bash
# Installs what libmatexcomm needs on a fresh Debian/Ubuntu machine, and only
# what is missing (so a second run does nothing). Sourced by demo.sh and test.sh.
set -euo pipefail

MATEX_APT_PACKAGES=(cmake g++ make pkg-config openmpi-bin libopenmpi-dev libhwloc-dev hwloc
                    googletest libgtest-dev libbenchmark-dev python3 python3-pip python3-venv
                    gfortran  # the interposer's Fortran tests (tests/interposer)
                    nlohmann-json3-dev  # torch's flight-recorder header needs it (torch_integration)
                    ccache)  # scripts/test.sh: its build and the install tests' pip builds share objects

missing=()
for package in "${MATEX_APT_PACKAGES[@]}"; do
  [[ $(dpkg-query -W -f='${Status}' "$package" 2>/dev/null) == *"install ok installed"* ]] || missing+=("$package")
done
if ((${#missing[@]} > 0)); then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  [[ $(id -u) -ne 0 ]] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}"
fi

# TensorFlow for the integration (tf_integration/, tests/tf), from PyPI, into
# the python3 on PATH, tf_keras (Keras 2) for the test of its patches, h5py
# and netCDF4 for matex.data, and tensorboard. A
# Debian system Python refuses pip installs unless told.
matex_pip_install() {
  echo "setup: installing $*"
  if ! python3 -m pip install -q "$@" 2>/tmp/matex-pip.log; then
    if grep -q externally-managed /tmp/matex-pip.log; then
      python3 -m pip install -q --break-system-packages "$@"
    else
      cat /tmp/matex-pip.log >&2
      exit 1
    fi
  fi
}
if ! python3 -c 'import tensorflow as tf, sys; sys.exit(not tf.__version__.startswith("2.21."))' 2>/dev/null; then
  matex_pip_install "tensorflow-cpu==2.21.*"
fi
if ! python3 -c 'import tf_keras, sys; sys.exit(not tf_keras.__version__.startswith("2.21."))' 2>/dev/null; then
  matex_pip_install "tf-keras==2.21.*"
fi
# The file formats matex.data reads (serial builds; tests/tf/data_readers.py).
python3 -c 'import h5py' 2>/dev/null || matex_pip_install h5py
python3 -c 'import netCDF4' 2>/dev/null || matex_pip_install netCDF4
# tf.summary's writers and Keras' TensorBoard callback need the tensorboard package (tests/tf/files_fit.py).
python3 -c 'import tensorboard' 2>/dev/null || matex_pip_install "tensorboard==2.21.*"

# PyTorch for torch_integration/ and tests/torch. PyPI has only the CUDA
# build, whose full dependency list is several GB of CUDA wheels; on a machine
# without a GPU torch imports with far less: the wheel without its
# dependencies, its pure-Python ones, and the four NVIDIA libraries its import
# links (cuFile, cuSPARSELt, NVSHMEM, and the NCCL it was built with, which
# must be torch's own, not the system's). A GPU machine should install the
# full set instead: `pip install torch==2.15.0` (docs/pytorch.md).
if ! python3 -c 'import torch, sys; sys.exit(not torch.__version__.startswith("2.15."))' 2>/dev/null; then
  matex_pip_install --no-deps torch==2.15.0
  matex_pip_install filelock 'typing-extensions>=4.13.0' 'sympy>=1.13.3' 'networkx>=2.5.1' jinja2 'fsspec>=0.8.5'
  matex_pip_install --no-deps 'nvidia-cufile==1.17.1.22.*' 'nvidia-cusparselt-cu13==0.8.1' \
    'nvidia-nvshmem-cu13==3.7.2' 'nvidia-nccl-cu13==2.30.7'
fi

# mpi4py and its own test suite, which CI runs under the MPI interposer
# (tests/interposer): the wheel for the test's Python, the suite from the
# source distribution (its test/ folder), kept in build/mpi4py.
if ! python3 -c 'import mpi4py, sys; sys.exit(mpi4py.__version__ != "4.1.2")' 2>/dev/null; then
  matex_pip_install mpi4py==4.1.2
fi
if [[ ! -f build/mpi4py/mpi4py-4.1.2.tar.gz ]]; then
  echo "setup: downloading mpi4py 4.1.2's source distribution (its test suite)"
  python3 -m pip download -q --no-deps --no-binary :all: mpi4py==4.1.2 -d build/mpi4py
fi

# The wheels the install tests take offline (tests/install): the build
# backend (scikit-build-core) and TensorFlow for a fresh environment of the
# system's Python, which an unprivileged user installs into (for that
# Python's tags, hence its own pip; the download comes from pip's cache).
if ! compgen -G "build/wheelhouse/scikit_build_core-*.whl" >/dev/null ||
   ! compgen -G "build/wheelhouse/tensorflow_cpu-2.21.*.whl" >/dev/null; then
  echo "setup: downloading the install tests' wheels into build/wheelhouse"
  /usr/bin/python3 -m pip download -q -d build/wheelhouse scikit-build-core "tensorflow-cpu==2.21.*"
fi

# Open MPI refuses to run as root unless told, and needs permission to put
# more ranks than cores on this machine (the tests use 4 ranks on 2 cores).
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1
MATEX_JOBS=$(nproc)
export MATEX_JOBS
