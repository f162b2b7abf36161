#!/usr/bin/env bash
# timeline_test.sh MPIEXEC MATEX_BENCH - runs an engine workload on 2 ranks with
# MATEX_TIMELINE set (one file per rank), then parses both traces as JSON and
# looks for the events docs/engine.md promises.
set -euo pipefail
MPIEXEC=$1
BENCH=$2
DIR=$(mktemp -d)
trap 'rm -rf "$DIR"' EXIT
# Twice: with shared memory, fusion runs straight on the tensors' buffers
# (zero-copy); without it (MATEX_SHM_DISABLE=1), fused tensors are packed into
# the fusion buffer and unpacked, and the trace shows both steps.
for mode in zero-copy packed; do
  disable=0
  wanted="queue negotiate allreduce reduce copy-in"
  if [ "$mode" = packed ]; then
    disable=1
    wanted="queue negotiate pack allreduce unpack"
  fi
  rm -f "$DIR"/trace-*.json
  MATEX_SHM_DISABLE=$disable MATEX_TIMELINE="$DIR/trace-%r.json" "$MPIEXEC" -np 2 --oversubscribe "$BENCH" \
    --workload small -n 1 -w 0 > "$DIR/out.txt"
  python3 - "$DIR" "$mode" $wanted <<'PY'
import json, sys, pathlib
d = pathlib.Path(sys.argv[1])
mode = sys.argv[2]
for rank in (0, 1):
    events = json.loads((d / f"trace-{rank}.json").read_text())
    rows = {e["args"]["name"]: e["tid"] for e in events if e.get("ph") == "M"}
    assert "small/0" in rows, f"{mode}, rank {rank}: no row for tensor small/0"
    names = {e["name"] for e in events if e.get("ph") == "X"}
    for wanted in sys.argv[3:]:
        assert wanted in names, f"{mode}, rank {rank}: no '{wanted}' event (have {sorted(names)})"
    reduces = [e for e in events if e.get("name") == "allreduce"]
    assert all(e["args"]["algorithm"] and e["args"]["bytes"] > 0 for e in reduces), "allreduce events lack args"
    assert all(e["dur"] >= 0 and e["pid"] == rank for e in events if e.get("ph") == "X"), "bad ts/dur/pid"
    fused = max(e["args"]["tensors"] for e in reduces)
    assert fused > 1, f"{mode}, rank {rank}: no allreduce carried more than one tensor"
    print(f"{mode}, rank {rank}: {len(events)} events, {len(rows)} tensors, up to {fused} tensors per fused allreduce")
PY
done
echo "PASS: both ranks' timelines parse, zero-copy and packed, and hold the queue/negotiate/(pack)/allreduce/(unpack) and algorithm-phase events"
