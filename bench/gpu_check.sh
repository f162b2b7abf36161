#!/usr/bin/env bash
# bench/gpu_check.sh - the GPU machine's check, where DEVELOPERS.md and the
# issues name it; it lives in bench/gpu/ with its helpers.
exec bash "$(dirname "${BASH_SOURCE[0]}")/gpu/gpu_check.sh" "$@"
