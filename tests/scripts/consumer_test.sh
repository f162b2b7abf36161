#!/usr/bin/env bash
# consumer_test.sh - install a build tree into a fresh prefix, then build and
# run tests/consumer/consumer.c against the installed copy, twice:
#   1. as a CMake project using find_package(matexcomm) -> matexcomm::matexcomm,
#   2. with plain `cc $(pkg-config --cflags --libs matexcomm)` and an rpath.
# Each binary must resolve libmatexcomm from the prefix and print OK on both
# of 2 ranks.
#
# usage: consumer_test.sh <build-dir> <source-dir>   (env MPIEXEC: mpirun to use)
set -eu

BUILD=${1:?usage: consumer_test.sh <build-dir> <source-dir>}
SOURCE=${2:?usage: consumer_test.sh <build-dir> <source-dir>}
MPIEXEC=${MPIEXEC:-mpiexec}
CC=${CC:-cc}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

WORK=$(mktemp -d /tmp/matex-consumer-XXXXXX)
trap 'rm -rf "$WORK"' EXIT
PREFIX=$WORK/prefix

step() { echo "==== $*"; }

# check_consumer: the binary uses the prefix's library and prints OK on 2 ranks.
source "$SOURCE/tests/consumer/check_consumer.sh"

step "install $BUILD into $PREFIX"
cmake --install "$BUILD" --prefix "$PREFIX" >"$WORK/install.log" || { cat "$WORK/install.log"; exit 1; }
for needed in include/matexcomm/matexcomm.h lib/cmake/matexcomm/matexcommConfig.cmake lib/pkgconfig/matexcomm.pc; do
  [ -e "$PREFIX/$needed" ] || { echo "FAIL: $needed was not installed"; exit 1; }
done

step "find_package(matexcomm) consumer"
cmake -S "$SOURCE/tests/consumer" -B "$WORK/cmake-build" -DCMAKE_PREFIX_PATH="$PREFIX" \
  -DCMAKE_BUILD_TYPE=Release >"$WORK/configure.log" 2>&1 || { cat "$WORK/configure.log"; exit 1; }
cmake --build "$WORK/cmake-build" >"$WORK/build.log" 2>&1 || { cat "$WORK/build.log"; exit 1; }
check_consumer "$WORK/cmake-build/consumer" "$PREFIX" "$MPIEXEC" --oversubscribe

step "pkg-config consumer"
export PKG_CONFIG_PATH=$PREFIX/lib/pkgconfig
flags=$(pkg-config --cflags --libs matexcomm)
echo "pkg-config --cflags --libs matexcomm: $flags"
# shellcheck disable=SC2086  # the flags are meant to be split
"$CC" -o "$WORK/consumer-pkgconfig" "$SOURCE/tests/consumer/consumer.c" $flags -Wl,-rpath,"$PREFIX/lib"
check_consumer "$WORK/consumer-pkgconfig" "$PREFIX" "$MPIEXEC" --oversubscribe

echo "PASS: find_package and pkg-config consumers both work"
