#!/usr/bin/env bash
# scripts/compat.sh REQUIREMENT... - does matex build, and pass its framework
# tests, against these framework releases? Each REQUIREMENT is a pip
# requirement of one framework (torch==2.11.0, tensorflow-cpu==2.21.0,
# keras==3.14.0; a lone keras gets the TensorFlow release of MATEX_COMPAT_TF,
# default tensorflow-cpu==2.21.*), or several joined by '+' that install
# together: tensorflow-cpu==2.16.2+keras==3.0.5+tf-keras==2.16.0. For each,
# in a fresh virtual environment build/compat/<requirement>/venv:
#   1. the framework: torch as scripts/setup.sh installs it (the wheel, its
#      pure-Python dependencies and the four NVIDIA libraries its import links,
#      at the versions its metadata pins), TensorFlow and Keras with theirs;
#   2. pip install of the repository with that binding required
#      (MATEX_WITH_TORCH=1 or MATEX_WITH_TF=1; a release outside the declared
#      range must instead be skipped with the reason, and MATEX_ENABLE=1 must
#      refuse it: reported as "refused, as declared"), through ccache when
#      there is one (CCACHE_DIR, default build/compat/ccache);
#   3. python -m matex doctor;
#   4. torch: tests/torch/collectives.py and ddp_exact.py on 2 ranks and on 4
#      in virtual nodes 2,2, and examples/torch_ddp_tutorial.py with
#      MATEX_ENABLE=1 against the plain script (tests/torch/compare_plain.py);
#      TensorFlow/Keras 3: tests/tf/test_tf_ops.py on 2 ranks; the examples
#      keras_fit_numpy.py, keras_fit_tfdata.py and custom_loop.py and the test
#      lazy_model_positional.py under matex.verify -np 2; Horovod's API
#      (MATEX_HOROVOD=1): tests/horovod/tf_api.py and keras_mnist.py on 2
#      ranks; and where tf_keras is installed, with TF_USE_LEGACY_KERAS=1:
#      tests/tf/tf_keras_fit.py under matex.verify -np 2 and
#      tests/horovod/tf_keras_api.py on 2 ranks.
# Logs stay in build/compat/<requirement>/; the rows go to build/compat/matrix.md
# (the table of docs/compatibility.md), with the largest relative difference
# matex.verify measured against the plain single-process run (Keras 3;
# tf_keras). Needs the network (PyPI), MPI and a compiler, not root. Exit
# status: the number of requirements that failed.
set -uo pipefail
cd "$(dirname "$0")/.."
[[ $# -gt 0 ]] || { sed -n '2,/^set -uo/p' "$0" | grep '^#' | sed 's/^# \{0,1\}//'; exit 2; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export TF_CPP_MIN_LOG_LEVEL=3 MATEX_TIMEOUT_SECONDS=120
PYTHON=${MATEX_COMPAT_PYTHON:-python3}
TF_PIN=${MATEX_COMPAT_TF:-tensorflow-cpu==2.21.*}
REPO=$PWD
mkdir -p build/compat
MATRIX=build/compat/matrix.md
if command -v ccache > /dev/null; then  # each row's pip build compiles the same library: once is enough
  export CCACHE_DIR=${CCACHE_DIR:-$REPO/build/compat/ccache} CCACHE_BASEDIR=$REPO
  export CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime
  export CMAKE_C_COMPILER_LAUNCHER=ccache CMAKE_CXX_COMPILER_LAUNCHER=ccache CMAKE_CUDA_COMPILER_LAUNCHER=ccache
  export CC=${CC:-gcc} CXX=${CXX:-g++} CMAKE_GENERATOR=${CMAKE_GENERATOR:-Unix Makefiles}
  export CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}
fi
failures=0

lean_torch() {  # the torch wheel and only what `import torch` needs on a machine without a GPU
  local venv=$1 requirement=$2
  "$venv/bin/python" -m pip install -q --no-deps "$requirement" || return 1
  # Its pure-Python dependencies, and the NVIDIA libraries its import links at the versions it pins
  # (cuFile through the cuda-toolkit meta-package's "cufile" extra, in newer releases).
  torch_deps "$venv" > "$venv/torch-deps.txt" || return 1
  if grep -q '^cuda-toolkit' "$venv/torch-deps.txt"; then
    "$venv/bin/python" -m pip install -q --no-deps "$(grep '^cuda-toolkit' "$venv/torch-deps.txt")" || return 1
    torch_deps "$venv" cuda-toolkit cufile >> "$venv/torch-deps.txt" || return 1
  fi
  { grep -v '^nvidia-\|^cuda-toolkit' "$venv/torch-deps.txt" || true; } |
    xargs -r "$venv/bin/python" -m pip install -q numpy || return 1
  { grep '^nvidia-' "$venv/torch-deps.txt" || true; } | xargs -r "$venv/bin/python" -m pip install -q --no-deps || return 1
  "$venv/bin/python" -c 'import torch; print("torch", torch.__version__, "imports")'
}

torch_deps() {  # torch_deps VENV [DISTRIBUTION EXTRA]: the requirements worth installing, one per line
  "$venv/bin/python" - "${2:-torch}" "${3:-}" <<'PY'
import importlib.metadata as md
import sys
from pip._vendor.packaging.requirements import Requirement
distribution, extra = sys.argv[1], sys.argv[2]
keep_nvidia = ("nvidia-cufile", "nvidia-cusparselt", "nvidia-nvshmem", "nvidia-nccl")
for text in md.requires(distribution) or []:
    req = Requirement(text)
    if req.marker is not None and not req.marker.evaluate({"extra": extra}):
        continue
    name = req.name.lower()
    if extra and "extra" not in str(req.marker or ""):
        continue  # the meta-package's own requirements: only the extra's are wanted
    if name.startswith("nvidia-") and not name.startswith(keep_nvidia):
        continue
    if name == "cuda-toolkit" and "cufile" in req.extras:
        print(f"cuda-toolkit{req.specifier}")
        continue
    if name in ("triton", "cuda-toolkit") or name.startswith("cuda-"):
        continue
    print(f"{req.name}{req.specifier}")
PY
}

for requirement in "$@"; do
  name=$(tr -c 'A-Za-z0-9._-' '_' <<<"$requirement" | sed 's/_*$//')  # no '=': env would take the path for a VAR=value
  dir=build/compat/$name
  rm -rf "$dir"; mkdir -p "$dir"
  venv=$REPO/$dir/venv
  log=$REPO/$dir/log.txt
  IFS=+ read -r -a requirements <<<"$requirement"
  case $requirement in
    torch*) framework=torch; switch=MATEX_WITH_TORCH ;;
    tensorflow*|tf-nightly*) framework=tf; switch=MATEX_WITH_TF ;;
    keras*) framework=keras; switch=MATEX_WITH_TF ;;
    *) echo "$requirement: not a framework this script knows (torch, tensorflow*, keras)"; failures=$((failures + 1)); continue ;;
  esac
  echo "==== $requirement ($dir)"
  steps=()
  verdict=PASS
  step() {  # step NAME COMMAND...: runs it into the log, records ok/FAIL
    local label=$1; shift
    echo "---- $label: $*" >> "$log"
    if "$@" >> "$log" 2>&1; then steps+=("$label ok"); return 0; fi
    steps+=("$label FAIL"); verdict=FAIL; return 1
  }
  declare -A largest=()  # flavour (keras3, tf_keras) -> the largest difference matex.verify reported
  verify_step() {  # verify_step NAME FLAVOUR SCRIPT: matex.verify -np 2, noting its largest difference
    local label=$1 flavour=$2 script=$3 before figure
    local legacy=0
    [[ $flavour == tf_keras ]] && legacy=1
    before=$(wc -l < "$log")
    step "$label" env TF_USE_LEGACY_KERAS=$legacy "$venv/bin/python" -m matex.verify -np 2 "$script"
    figure=$(tail -n +$((before + 1)) "$log" | grep -o 'largest relative difference:\{0,1\} [0-9][0-9.e+-]*' |
             awk '{print $NF}' | sort -g | tail -1)
    if [[ -n $figure ]] && { [[ -z ${largest[$flavour]:-} ]] ||
                             awk -v a="$figure" -v b="${largest[$flavour]}" 'BEGIN { exit !(a > b) }'; }; then
      largest[$flavour]=$figure
    fi
  }
  horovod_step() {  # horovod_step NAME SCRIPT [VAR=value...]: tests/horovod/SCRIPT.py on 2 ranks
    local label=$1 script=$2; shift 2
    mkdir -p "$REPO/$dir/$script.out"
    step "$label" env MATEX_HOROVOD=1 OMP_NUM_THREADS=1 PYTHONPATH="$REPO/tests/horovod" "$@" \
      mpirun -np 2 --bind-to none "$venv/bin/python" "$REPO/tests/horovod/$script.py" "$REPO/$dir/$script.out"
  }
  "$PYTHON" -m venv "$venv" >> "$log" 2>&1
  case $framework in
    torch) step "install torch" lean_torch "$venv" "$requirement" ;;
    tf) step "install" "$venv/bin/python" -m pip install -q "${requirements[@]}" ;;
    keras) step "install" "$venv/bin/python" -m pip install -q "$TF_PIN" &&
           step "install keras" "$venv/bin/python" -m pip install -q "${requirements[@]}" ;;
  esac
  versions=$("$venv/bin/python" -c 'import importlib.metadata as m
out = []
for d in ("torch", "tensorflow-cpu", "tensorflow", "tf-nightly-cpu", "keras", "tf-keras"):
    try: out.append(f"{d} {m.version(d)}")
    except m.PackageNotFoundError: pass
print(", ".join(out))' 2>/dev/null)
  started=$SECONDS
  if [[ $verdict == PASS ]]; then
    if env "$switch=1" SKBUILD_BUILD_DIR="$REPO/$dir/build" "$venv/bin/python" -m pip install -v "$REPO" \
        > "$dir/pip.log" 2>&1; then
      steps+=("pip install ok ($((SECONDS - started)) s$(grep -q 'XLA lowerings not built' "$dir/pip.log" &&
                                                          echo ', without XLA lowerings'))")
    elif grep -q "is outside the supported range" <<<"$(tr -s '\n ' '  ' < "$dir/pip.log")"; then
      # Outside the declared range: the install must skip it saying why, and MATEX_ENABLE=1 must refuse it.
      # (CMake wraps the message's lines: read the log as one line.)
      verdict="refused, as declared"
      reason=$(tr -s '\n ' '  ' < "$dir/pip.log" | grep -o "[A-Za-z]* [0-9][^ ]* (found by [^)]*) is outside the supported range, [0-9.]* to below [0-9.]*" | sed -n 1p | sed 's/ (found by [^)]*)//')
      steps+=("$switch=1 install stops: ${reason:-see pip.log}")
      if env "$switch=auto" "$venv/bin/python" -m pip install -q "$REPO" >> "$log" 2>&1; then
        cd "$dir"
        if [[ $framework == torch ]]; then  # refused where the takeover would start: the process group
          probe=(env MATEX_ENABLE=1 "$venv/bin/python" -c 'import torch, torch.distributed as d
d.init_process_group("gloo", rank=0, world_size=1, store=d.HashStore())')
        else
          probe=(env MATEX_ENABLE=1 "$venv/bin/python" -c 'import tensorflow')
        fi
        if "${probe[@]}" > refusal.txt 2>&1; then
          steps+=("MATEX_ENABLE=1 did NOT refuse it"); verdict=FAIL
        elif grep -q "cannot run here" refusal.txt; then
          steps+=("MATEX_ENABLE=1 stops: $(grep -o 'cannot run here: .* [0-9.]* to below [0-9.]*' refusal.txt | sed -n 1p)")
        else
          steps+=("MATEX_ENABLE=1 failed without the message"); verdict=FAIL
        fi
        cd "$REPO"
      else
        steps+=("auto install FAIL"); verdict=FAIL
      fi
    else
      steps+=("pip install FAIL"); verdict=FAIL; tail -30 "$dir/pip.log" >> "$log"
    fi
  fi
  if [[ $verdict == PASS ]]; then
    cd "$dir"
    step doctor "$venv/bin/python" -m matex doctor
    if [[ $framework == torch ]]; then
      for script in collectives ddp_exact; do
        step "$script np2" env PYTHONPATH="$REPO/tests/torch" OMP_NUM_THREADS=1 \
          mpirun -np 2 --bind-to none "$venv/bin/python" "$REPO/tests/torch/$script.py"
        step "$script np4 2,2" env PYTHONPATH="$REPO/tests/torch" OMP_NUM_THREADS=1 MATEX_VIRTUAL_NODES=2,2 \
          mpirun -np 4 --bind-to none "$venv/bin/python" "$REPO/tests/torch/$script.py"
      done
      step "DDP tutorial vs plain" "$venv/bin/python" "$REPO/tests/torch/compare_plain.py" -np 2 \
        "$REPO/examples/torch_ddp_tutorial.py"
    else
      step "tf ops np2" mpirun -np 2 "$venv/bin/python" "$REPO/tests/tf/test_tf_ops.py"
      for example in keras_fit_numpy keras_fit_tfdata custom_loop; do
        verify_step "$example verify np2" keras3 "$REPO/examples/$example.py"
      done
      # A model that builds in its first step: where Keras releases differ most (docs/compatibility.md).
      verify_step "lazy_model_positional verify np2" keras3 "$REPO/tests/tf/lazy_model_positional.py"
      for script in tf_api keras_mnist; do
        horovod_step "horovod $script np2" "$script"
      done
      if "$venv/bin/python" -c 'import tf_keras' > /dev/null 2>&1; then
        verify_step "tf_keras: tf_keras_fit verify np2" tf_keras "$REPO/tests/tf/tf_keras_fit.py"
        horovod_step "tf_keras: horovod tf_keras_api np2" tf_keras_api TF_USE_LEGACY_KERAS=1
      fi
    fi
    cd "$REPO"
  fi
  [[ $verdict == FAIL ]] && failures=$((failures + 1))
  summary=$(IFS=';'; echo "${steps[*]}" | sed 's/;/; /g')
  echo "$verdict: $summary"
  differences=""
  [[ -n ${largest[keras3]:-} ]] && differences="Keras 3: ${largest[keras3]}"
  [[ -n ${largest[tf_keras]:-} ]] && differences="${differences:+$differences; }tf_keras: ${largest[tf_keras]}"
  printf '| %s | %s | %s | %s | %s | %s |\n' "$(date -u +%Y-%m-%d)" "$requirement" "${versions:-?}" "$verdict" \
    "${differences:--}" "$summary" >> "$MATRIX"
done
echo "rows appended to $MATRIX"
exit "$failures"
