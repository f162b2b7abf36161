#!/usr/bin/env bash
# Fails when libmatexcomm.so ($1) imports an MPI_ collective that the
# interposer ($2) defines: a preloaded interposer would then receive the
# library's own calls.
set -euo pipefail
imported=$(nm -D --undefined-only "$1" | awk '{print $2}' | grep '^MPI_' | sort -u)
defined=$(nm -D --defined-only "$2" | awk '{print $3}' | grep '^MPI_' | grep -v '^MPI_Init\(_thread\)\?$' | sort -u)
both=$(comm -12 <(echo "$imported") <(echo "$defined"))
echo "the interposer defines $(echo "$defined" | wc -l) MPI_ collectives; libmatexcomm.so imports $(echo "$imported" | wc -l) MPI_ functions"
if [[ -n $both ]]; then
  echo "FAIL: libmatexcomm.so calls these through their MPI_ names: $both"
  exit 1
fi
echo "none of them is one of the interposer's"
