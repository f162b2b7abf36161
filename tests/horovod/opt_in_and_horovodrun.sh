#!/usr/bin/env bash
# The opt-in and horovodrun (docs/horovod.md). Usage: opt_in_and_horovodrun.sh PYTHON OUTPUT_FOLDER
# 1. Without MATEX_HOROVOD the installed matex provides no `horovod` (a real Horovod, if one is installed,
#    stays the one imported). 2. HOROVOD_* settings map onto MATEX_* (settings_check.py). 3. The opt-in
#    line puts horovodrun on PATH; --check-build reports the build, refused flags name themselves, and a
#    Horovod torch example runs through it on 2 ranks, with a flag's setting reaching every rank and
#    Horovod's mpirun options (no binding, -x of the environment). 4. MATEX_ENABLE=1 with a Horovod
#    TensorFlow script is refused.
set -euo pipefail
python=$1 out=$2
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
fail() { echo "FAIL: $*" >&2; exit 1; }

where=$(env -u MATEX_HOROVOD "$python" -c 'import importlib.util as u; s = u.find_spec("horovod"); print(s.origin if s else "none")')
case $where in
  *matex_horovod*) fail "matex's horovod is importable without MATEX_HOROVOD=1 ($where)" ;;
esac
echo "without the opt-in, horovod resolves to: $where"

MATEX_HOROVOD=1 "$python" "$here/settings_check.py"

# MATEX_ENABLE's activation and a Horovod TensorFlow script would each shard and average: refused.
if "$python" -c 'import tensorflow' 2>/dev/null; then
  if message=$(MATEX_ENABLE=1 MATEX_HOROVOD=1 "${MATEX_MPIRUN:-mpirun}" -np 1 "$python" -c '
import tensorflow
import horovod.tensorflow as hvd
hvd.init()' 2>&1); then fail "hvd.init() under MATEX_ENABLE=1 and MATEX_HOROVOD=1 did not refuse"; fi
  grep -q "unset MATEX_ENABLE" <<<"$message" || fail "MATEX_ENABLE=1 with MATEX_HOROVOD=1 said: $message"
  echo "MATEX_ENABLE=1 with a Horovod TensorFlow script: refused"
fi

eval "$("$python" -m matex horovod-env)"
[ "$(command -v horovodrun)" != "" ] || fail "horovod-env did not put horovodrun on PATH"
report=$(horovodrun --check-build)
echo "$report"
grep -q '\[X\] MPI' <<<"$report" || fail "--check-build does not report MPI"
grep -q '\[X\] PyTorch' <<<"$report" || fail "--check-build does not report PyTorch"
if message=$(horovodrun -np 2 --gloo python -c pass 2>&1); then fail "horovodrun --gloo ran"; fi
grep -q -- '--gloo is not supported' <<<"$message" || fail "horovodrun --gloo said: $message"

ranks=$(horovodrun -np 2 --fusion-threshold-mb 1 --mpi-args=--oversubscribe python -c '
import os
import horovod.torch as hvd
hvd.init()
seen = hvd.allgather_object(os.environ["MATEX_FUSION_BYTES"])
if hvd.rank() == 0:
    print("MATEX_FUSION_BYTES on each rank:", " ".join(seen), flush=True)')
echo "$ranks"
grep -q "MATEX_FUSION_BYTES on each rank: 1048576 1048576$" <<<"$ranks" ||
  fail "not every rank saw --fusion-threshold-mb 1 as MATEX_FUSION_BYTES=1048576"
status=0
horovodrun -np 2 --mpi-args=--oversubscribe --verbose python "$here/torch_mnist.py" "$out" 2>"$out/stderr.txt" || status=$?
cat "$out/stderr.txt" >&2
[ "$status" = 0 ] || fail "the torch example through horovodrun exited with $status"
launched=$(grep '^horovodrun (served by matex): ' "$out/stderr.txt") || fail "horovodrun --verbose did not print its mpirun"
for part in "--bind-to none" "--map-by slot" "-x MATEX_HOROVOD" "-x PATH" "--oversubscribe"; do
  grep -q -- "$part" <<<"$launched" || fail "horovodrun's mpirun lacks $part: $launched"
done
echo "horovodrun and the opt-in work as documented"
