#!/usr/bin/env bash
# on_small_dev_shm.sh COMMAND [ARGS...] - runs a gtest COMMAND in a private
# mount namespace whose /dev/shm is a 1 MiB tmpfs, with
# MATEX_TEST_SMALL_DEV_SHM=1. Exits 77 (ctest: skipped) where no mount
# namespace can be had (neither root nor user namespaces) or the test skipped
# itself.
set -euo pipefail
if unshare -m true 2>/dev/null; then
  flags=(-m)
elif unshare -m --map-root-user true 2>/dev/null; then
  flags=(-m --map-root-user)
else
  echo "SKIP: no private mount namespace here (unshare -m)"; exit 77
fi
status=0
output=$(unshare "${flags[@]}" sh -c 'mount -t tmpfs -o size=1m tmpfs /dev/shm || exit 77
MATEX_TEST_SMALL_DEV_SHM=1 exec "$@"' on_small_dev_shm "$@" 2>&1) || status=$?
echo "$output"
if [ "$status" -eq 0 ] && grep -q "^\[  SKIPPED \]" <<< "$output"; then exit 77; fi
exit "$status"
