#!/usr/bin/env bash
# Installs what libmatexcomm needs on a fresh Debian/Ubuntu machine, and only
# what is missing (so a second run does nothing). Sourced by demo.sh and test.sh.
set -euo pipefail

MATEX_APT_PACKAGES=(cmake g++ make pkg-config openmpi-bin libopenmpi-dev libhwloc-dev hwloc
                    googletest libgtest-dev libbenchmark-dev python3 python3-pip)

missing=()
for package in "${MATEX_APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if ((${#missing[@]} > 0)); then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  [[ $(id -u) -ne 0 ]] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}"
fi

# TensorFlow for the integration (tf_integration/, tests/tf), from PyPI, into
# the python3 on PATH, tf_keras (Keras 2) for the test of its patches, and h5py
# and netCDF4 for matex.data. A
# Debian system Python refuses pip installs unless told.
matex_pip_install() {
  echo "setup: installing $1"
  if ! python3 -m pip install -q "$1" 2>/tmp/matex-pip.log; then
    if grep -q externally-managed /tmp/matex-pip.log; then
      python3 -m pip install -q --break-system-packages "$1"
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

# Open MPI refuses to run as root unless told, and needs permission to put
# more ranks than cores on this machine (the tests use 4 ranks on 2 cores).
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1
MATEX_JOBS=$(nproc)
export MATEX_JOBS
