# bench/gpu/gpu_check_more.sh - steps 6b to 8 of bench/gpu/gpu_check.sh, sourced by
# it after the GPU benchmarks (not run alone): the PyTorch backend on CUDA tensors,
# the plain two-process CUDA round trip, and the CPU section on the machine's
# cores. Uses gpu_check.sh's helpers (add_row, fail_note, banner, run_bounded,
# step_limit, want_step, kv, fmt, ge, isnum) and its variables (BIN, BUILD_DIR,
# RESULT_DIR, WORK, MPIRUN, MPIRUN_FLAGS, CTEST, GPU_OK, repo_root).
# shellcheck shell=bash
# shellcheck disable=SC2154  # repo_root and the rest are gpu_check.sh's

# ---------------------------------------------------------------- 6b. the torch backend
# torch_row <row name> <output file> <exit status> <seconds>
torch_row() {
  local name=$1 out=$2 rc=$3 secs=$4 line result=PASS detail
  line=$(grep -E '^TORCH_SUMMARY ' "$out" | tail -1)
  if grep -q '^SKIPPED: no GPU' "$out"; then
    add_row "$name" "SKIPPED" "$(grep -m1 -o 'SKIPPED: no GPU.*' "$out")" "$secs"
    fail_note "$name skipped"
    return
  fi
  if [[ -z "$line" ]]; then
    local last
    last=$(grep -E 'Error|error|WRONG' "$out" | tail -1 | cut -c1-160)
    add_row "$name" "FAIL" "exit $rc$(rc_note "$rc"); no TORCH_SUMMARY line${last:+; $last}" "$secs"
    fail_note "$name"
    return
  fi
  local ref checks wrong
  ref=$(kv "$line" reference) checks=$(kv "$line" checks) wrong=$(kv "$line" wrong)
  detail="$(kv "$line" device) tensors; $checks checks (collectives and a DDP step) against $ref, $wrong wrong"
  local coll m r
  for coll in allreduce allgather reduce_scatter; do
    m=$(kv "$line" "${coll}_matex_us") r=$(kv "$line" "${coll}_ref_us")
    detail+="; $coll $(kv "$line" mib) MiB: matex $(fmt "$m") us, $ref $(fmt "$r") us"
    isnum "$m" && isnum "$r" && detail+=" ($(awk -v a="$r" -v b="$m" 'BEGIN { printf "%.2fx", (b > 0 ? a / b : 0) }'))"
  done
  [[ "$(kv "$line" ref_reduce_scatter)" == allreduce ]] && detail+=" ($ref's reduce_scatter timed as its all_reduce)"
  if (( rc != 0 )) || [[ "$wrong" != 0 ]] || ! isnum "$checks"; then result=FAIL; fail_note "$name"; fi
  add_row "$name" "$result" "$detail; exit $rc$(rc_note "$rc")" "$secs"
}

banner "6b. the torch backend against torch's own backends (np 1: nccl, np 2 on 1,1: gloo)"
if ! want_step torch; then
  echo "(not in MATEX_GPU_CHECK_STEPS)"
else
  t0=$SECONDS
  TORCH_PY=$BUILD_DIR/venv/bin/python
  has_install_test=$("$CTEST" --test-dir "$BUILD_DIR" -N -R '^torch\.ddp' 2>/dev/null | grep -c 'torch.ddp')
  if (( has_install_test == 0 )); then
    why=$(grep -m1 -iE 'torch' "$WORK/configure.log" 2>/dev/null | cut -c1-160)
    for r in "torch np1" "torch np2 (1,1)"; do
      add_row "$r" "FAIL" "not built: this build has no torch backend${why:+ ($why)}" 0
    done
    fail_note "torch backend not built"
  else
    if ! "$TORCH_PY" -c 'import matex_torch' >/dev/null 2>&1; then
      echo "+ ctest --test-dir $BUILD_DIR -R ^install.venv$ (pip install into the venv the torch tests use)"
      run_bounded "$(step_limit 180)" "$CTEST" --test-dir "$BUILD_DIR" -R '^install\.venv$' --output-on-failure \
        2>&1 | tail -20
    fi
    if ! "$TORCH_PY" -c 'import matex_torch' >/dev/null 2>&1; then
      for r in "torch np1" "torch np2 (1,1)"; do
        add_row "$r" "FAIL" "not run: matex_torch does not import in $TORCH_PY (ctest install.venv)" 0
      done
      fail_note "torch venv"
    else
      torch_device=cuda
      (( GPU_OK )) || torch_device=cpu
      for np in 1 2; do
        name="torch np$np"; env_args=(-u MATEX_VIRTUAL_NODES)
        # shellcheck disable=SC2054  # 1,1 is one value
        (( np == 2 )) && { name="torch np2 (1,1)"; env_args=(MATEX_VIRTUAL_NODES=1,1); }
        out=$WORK/torch_np$np.log; t1=$SECONDS
        echo "+ env ${env_args[*]} $MPIRUN -np $np ... $TORCH_PY bench/gpu/torch_cuda_check.py --device $torch_device"
        run_bounded "$(step_limit 90)" env "${env_args[@]}" OMP_NUM_THREADS=1 "$MPIRUN" -np "$np" "${MPIRUN_FLAGS[@]}" \
          "$TORCH_PY" "$repo_root/bench/gpu/torch_cuda_check.py" --device "$torch_device" --mib "$TORCH_MIB" \
          2>&1 | tee "$out"
        torch_row "$name" "$out" "${PIPESTATUS[0]}" "$((SECONDS - t1))"
      done
    fi
  fi
fi

# ---------------------------------------------------------------- 6c. plain round trip on one GPU
banner "6c. a plain two-process CUDA round trip on one GPU (no libmatexcomm)"
if ! want_step roundtrip; then
  echo "(not in MATEX_GPU_CHECK_STEPS)"
elif [[ ! -x "$BIN/matex-cuda-roundtrip" ]]; then
  add_row "cuda round trip (2 procs, 1 GPU)" "FAIL" "not run: $BIN/matex-cuda-roundtrip was not built" 0
  fail_note "round trip not built"
else
  t0=$SECONDS; out=$WORK/roundtrip.log
  rt_args=(--bytes 1024 --iters 200)
  (( GPU_OK )) || rt_args+=(--host)
  echo "+ $MPIRUN -np 2 $BIN/matex-cuda-roundtrip ${rt_args[*]}"
  run_bounded "$(step_limit 45)" "$MPIRUN" -np 2 "${MPIRUN_FLAGS[@]}" "$BIN/matex-cuda-roundtrip" "${rt_args[@]}" \
    2>&1 | tee "$out"
  rc=${PIPESTATUS[0]}
  line=$(grep -E '^ROUNDTRIP ' "$out" | tail -1)
  if grep -q '^SKIPPED: no GPU' "$out"; then
    add_row "cuda round trip (2 procs, 1 GPU)" "SKIPPED" "$(grep -m1 -o 'SKIPPED: no GPU.*' "$out")" "$((SECONDS - t0))"
  elif [[ -z "$line" || $rc -ne 0 ]]; then
    add_row "cuda round trip (2 procs, 1 GPU)" "FAIL" "exit $rc$(rc_note "$rc"); no ROUNDTRIP line" "$((SECONDS - t0))"
    fail_note "round trip"
  else
    # The library's small call on the same two ranks, from step 5's report.
    small=$(python3 - "$RESULT_DIR/bench_np2.json" <<'EOF' 2>/dev/null
import json, sys
rows = [r for r in json.load(open(sys.argv[1])).get("results", []) if r.get("size") == 1024]
if rows:
    print("%.1f %.1f" % (min(r["time_us"] for r in rows), min(r.get("mpi_time_us") or 0 for r in rows)))
EOF
)
    detail="$(kv "$line" memory) step of 1 KiB there and back: alone $(fmt "$(kv "$line" step_alone_us)") us, both ranks at once $(fmt "$(kv "$line" step_concurrent_us)") us; MPI ping-pong $(fmt "$(kv "$line" mpi_rtt_us)") us, with a step on each side $(fmt "$(kv "$line" rtt_with_steps_us)") us: hand-over between the processes $(fmt "$(kv "$line" handover_us)") us per side"
    if [[ -n "$small" ]]; then
      read -r ours mpi <<<"$small"
      detail+="; matex-bench np2 (1,1) at 1 KiB: matex $(fmt "$ours") us, MPI $(fmt "$mpi") us"
    fi
    add_row "cuda round trip (2 procs, 1 GPU)" "info" "$detail" "$((SECONDS - t0))"
  fi
fi

# ---------------------------------------------------------------- 7. the CPU section
# cpu_row <row name> <json files, space-separated> <exit status> <seconds> <limit GB/s or "">
#         <1: the limit is a target>: the worst speedup against MPI and where, busbw at the
# largest size and its share of the limit (a target of 70 % on one node).
cpu_row() {
  local name=$1 jsons=$2 rc=$3 secs=$4 limit=$5 limit_is_target=$6 parsed
  # shellcheck disable=SC2086  # one argument per file
  parsed=$(python3 - $jsons <<'EOF' 2>&1
import json, sys
rows = []
for path in sys.argv[1:]:
    try:
        rows += json.load(open(path)).get("results", [])
    except Exception as e:
        print("ERR no JSON report %s (%s)" % (path.rsplit("/", 1)[-1], e.__class__.__name__))
        sys.exit(0)
speed = [r for r in rows if isinstance(r.get("speedup"), (int, float))]
if not speed:
    print("ERR no row with a speedup against MPI")
    sys.exit(0)
worst = min(speed, key=lambda r: r["speedup"])
top = max(r["size"] for r in rows)
busbw = max((r["busbw"] for r in rows if r["size"] == top and isinstance(r.get("busbw"), (int, float))), default=-1)
wrong = sum((r.get("wrong") or 0) + (r.get("mpi_wrong") or 0) for r in rows)
below = sum(1 for r in speed if r["speedup"] < 1.0)
def label(n):
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return "%d_%s" % (n >> shift, unit)
    return "%d_B" % n
print("OK %.3f %s %s %s %.3f %d %d %d" % (worst["speedup"], label(worst["size"]),
                                         "in" if worst.get("inplace") else "out", label(top), busbw, wrong, below,
                                         len(speed)))
EOF
)
  if [[ "$parsed" != OK* ]]; then
    add_row "$name" "FAIL" "exit $rc$(rc_note "$rc"); ${parsed#ERR }" "$secs"
    fail_note "$name"
    return
  fi
  local worst at placement top busbw wrong below rows result=PASS detail
  read -r _ worst at placement top busbw wrong below rows <<<"$parsed"
  detail="worst speedup against MPI $(awk -v v="$worst" 'BEGIN { printf "%.2fx", v }') at ${at/_/ } ($placement of place); $below of $rows rows below 1.0x; busbw at ${top/_/ } $(fmt "$busbw") GB/s"
  if [[ -n "$limit" ]] && isnum "$limit"; then
    local pct
    pct=$(awk -v b="$busbw" -v l="$limit" 'BEGIN { printf "%.1f", (l > 0 ? 100 * b / l : 0) }')
    detail+=" = $pct % of the limit $(fmt "$limit") GB/s"
    if (( limit_is_target )); then
      detail+=" (target >= 70 %)"
      ge "$pct" 70 || { result=FAIL; fail_note "$name below 70 % of the limit"; }
    fi
  fi
  detail+="; #wrong $wrong; exit $rc$(rc_note "$rc")"
  ge "$worst" 1.0 || { result=FAIL; fail_note "$name below MPI"; }
  if (( rc != 0 || wrong != 0 )); then result=FAIL; fail_note "$name"; fi
  add_row "$name" "$result" "$detail" "$secs"
}

# layout_ranks <virtual nodes, e.g. 8,8>: the ranks they hold.
layout_ranks() {
  local sum=0 part parts
  IFS=, read -ra parts <<<"$1"
  for part in "${parts[@]}"; do sum=$((sum + part)); done
  echo "$sum"
}

# compare_all <row name> <virtual nodes or ""> <ranks> <largest size>: matex-bench --compare all,
# and the row of the size where auto is furthest from the fastest algorithm forced.
compare_all() {
  local name=$1 nodes=$2 np=$3 max=$4 t1=$SECONDS json rc parsed env_args=(-u MATEX_VIRTUAL_NODES)
  json=$RESULT_DIR/cpu_all_np${np}${nodes:+_${nodes//,/_}}.json; rm -f "$json"
  [[ -n "$nodes" ]] && env_args=(MATEX_VIRTUAL_NODES="$nodes")
  local all_args=(--compare all -b 1K -e "$max" -f 4 -c 1 -w 5 -n 10 --scale-iterations)
  echo "+ env ${env_args[*]} $MPIRUN -np $np ${cpu_flags[*]} $BIN/matex-bench ${all_args[*]} -J $json"
  run_bounded "$(step_limit 60)" env "${env_args[@]}" "$MPIRUN" -np "$np" "${cpu_flags[@]}" "$BIN/matex-bench" \
    "${all_args[@]}" -J "$json" >"$WORK/${json##*/}.log" 2>&1
  rc=$?
  tail -4 "$WORK/${json##*/}.log"
  parsed=$(python3 - "$json" <<'EOF' 2>&1
import json, sys
try:
    rows = json.load(open(sys.argv[1])).get("results", [])
except Exception as e:
    print("ERR no JSON report (%s)" % e.__class__.__name__)
    sys.exit(0)
worst = None
for r in rows:
    forced = {k: v for k, v in (r.get("forced_time_us") or {}).items() if isinstance(v, (int, float)) and v > 0}
    if not forced or not isinstance(r.get("time_us"), (int, float)):
        continue
    name, best = min(forced.items(), key=lambda kv: kv[1])
    ratio = r["time_us"] / best
    if worst is None or ratio > worst[0]:
        mpi = r.get("mpi_time_us") if isinstance(r.get("mpi_time_us"), (int, float)) else -1
        worst = (ratio, r["size"], name, best, r["time_us"], r.get("algo", "?"), mpi)
if worst is None:
    print("ERR no row with forced times")
else:
    print("OK %.2f %d %s %.1f %.1f %s %.1f %d" % (worst + (sum((r.get("wrong") or 0) for r in rows),)))
EOF
)
  if [[ "$parsed" != OK* ]]; then
    add_row "$name" "FAIL" "exit $rc$(rc_note "$rc"); ${parsed#ERR }" "$((SECONDS - t1))"
    fail_note "$name"
    return
  fi
  local ratio size best_name best_us auto_us auto_algo mpi_us wrong
  read -r _ ratio size best_name best_us auto_us auto_algo mpi_us wrong <<<"$parsed"
  add_row "$name" "info" "auto at most ${ratio}x the fastest algorithm forced, at $size B: auto ($auto_algo) $(fmt "$auto_us") us, $best_name $(fmt "$best_us") us, MPI $(fmt "$mpi_us") us; #wrong $wrong; exit $rc" "$((SECONDS - t1))"
  if (( rc != 0 || wrong != 0 )); then fail_note "$name"; fi
}

banner "7. CPU section: aggregate memcpy, then matex-bench --compare mpi per layout, --compare all"
if ! want_step cpu; then
  echo "(not in MATEX_GPU_CHECK_STEPS)"
elif [[ ! -x "$BIN/matex-bench" || ! -x "$BIN/matex-memcpy-aggregate" ]]; then
  add_row "cpu section" "FAIL" "not run: matex-bench or matex-memcpy-aggregate was not built" 0
  fail_note "cpu section not built"
else
  cpu_flags=("${MPIRUN_FLAGS[@]}")
  # One core per rank where there are enough of them (the figures of the issue were taken so).
  most=0
  for np in $CPU_RANKS; do (( np > most )) && most=$np; done
  (( most <= $(nproc) )) && cpu_flags+=(--bind-to core)
  t0=$SECONDS; out=$WORK/memcpy_aggregate.log
  echo "+ $MPIRUN -np $most ${cpu_flags[*]} $BIN/matex-memcpy-aggregate --bytes $CPU_MAX"
  run_bounded "$(step_limit 40)" "$MPIRUN" -np "$most" "${cpu_flags[@]}" "$BIN/matex-memcpy-aggregate" --bytes "$CPU_MAX" \
    2>&1 | tee "$out"
  rc=${PIPESTATUS[0]}
  line=$(grep -E '^MEMCPY_AGGREGATE ' "$out" | tail -1)
  total=$(kv "$line" total_GBps)
  # busbw limit of p ranks: (aggregate / p) x (2 / 3) x 2 (p - 1) / p (matex-memcpy-aggregate's header).
  limit=""
  if isnum "$total"; then
    limit=$(awk -v t="$total" -v p="$most" 'BEGIN { printf "%.3f", (t / p) * (2.0 / 3) * 2 * (p - 1) / p }')
    add_row "cpu memcpy, $most ranks at once" "info" "$(fmt "$total") GB/s in all ($(fmt "$(kv "$line" per_rank_GBps)") per rank; one rank alone $(fmt "$(kv "$line" single_GBps)")); busbw limit of an allreduce on $most ranks: $(fmt "$limit") GB/s" "$((SECONDS - t0))"
  else
    add_row "cpu memcpy, $most ranks at once" "FAIL" "exit $rc$(rc_note "$rc"); no MEMCPY_AGGREGATE line" "$((SECONDS - t0))"
    fail_note "cpu memcpy"
  fi
  # The trials are timed (no warm-up). Up to 1 MiB a job of 200 calls per size, the issue's rule
  # ("a job that makes a few hundred calls per size must not run below MPI"); from 4 MiB 10 calls.
  cpu_max_bytes=$(numfmt --from=iec "$CPU_MAX" 2>/dev/null || echo 0)
  small_max=$CPU_MAX
  (( cpu_max_bytes > 1048576 )) && small_max=1M
  sweeps=("-b 1K -e $small_max -n 200")
  (( cpu_max_bytes >= 4194304 )) && sweeps+=("-b 4M -e $CPU_MAX -n 10")
  layouts=()
  for np in $CPU_RANKS; do layouts+=("$np:"); done
  for layout in $CPU_LAYOUTS; do layouts+=("$(layout_ranks "$layout"):$layout"); done
  for entry in "${layouts[@]}"; do
    np=${entry%%:*} nodes=${entry#*:}
    name="cpu np$np ${nodes:-one node}"; tag=np${np}${nodes:+_${nodes//,/_}}
    env_args=(-u MATEX_VIRTUAL_NODES)
    [[ -n "$nodes" ]] && env_args=(MATEX_VIRTUAL_NODES="$nodes")
    t1=$SECONDS jsons="" rc=0
    for i in "${!sweeps[@]}"; do
      json=$RESULT_DIR/cpu_${tag}_$i.json; rm -f "$json"; jsons+=" $json"
      read -ra sweep <<<"${sweeps[$i]}"
      cpu_args=(--compare mpi -f 4 -c 1 -w 0 "${sweep[@]}")
      echo "+ env ${env_args[*]} $MPIRUN -np $np ${cpu_flags[*]} $BIN/matex-bench ${cpu_args[*]} -J $json"
      run_bounded "$(step_limit 60)" env "${env_args[@]}" "$MPIRUN" -np "$np" "${cpu_flags[@]}" "$BIN/matex-bench" \
        "${cpu_args[@]}" -J "$json" >"$WORK/cpu_${tag}_$i.log" 2>&1
      sweep_rc=$?
      (( rc == 0 )) && rc=$sweep_rc
      tail -3 "$WORK/cpu_${tag}_$i.log"
    done
    cpu_limit=""
    (( np == most )) && cpu_limit=$limit
    cpu_row "$name" "$jsons" "$rc" "$((SECONDS - t1))" "$cpu_limit" "$([[ -z "$nodes" ]] && echo 1 || echo 0)"
  done
  # --compare all: how far auto is from the fastest algorithm forced, on the most ranks of one
  # node up to 64 MiB, and on the first layout at 1-16 KiB (is flat, which carries small calls in
  # the call check, slower than MPI's own allreduce there, or is the choice wrong?).
  all_max=$CPU_MAX
  [[ "$CPU_MAX" == 256M ]] && all_max=64M
  compare_all "cpu np$most --compare all" "" "$most" "$all_max"
  first_layout=${CPU_LAYOUTS%% *}
  if [[ -n "$first_layout" ]]; then
    np=$(layout_ranks "$first_layout")
    compare_all "cpu np$np $first_layout --compare all (1-16 KiB)" "$first_layout" "$np" 16K
  fi
fi
