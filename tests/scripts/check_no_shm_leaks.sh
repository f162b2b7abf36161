#!/usr/bin/env bash
# Fails when any shared-memory segment of ours (/dev/shm/matex-*) exists.
# Segments are unlinked right after every local rank has mapped them, so even
# a live job has none: anything here is a leak.
shopt -s nullglob
leaks=(/dev/shm/matex-*)
if ((${#leaks[@]} > 0)); then
  echo "leaked shared-memory segments:"
  ls -l "${leaks[@]}"
  exit 1
fi
echo "no /dev/shm/matex-* segments"
