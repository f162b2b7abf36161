#!/usr/bin/env bash
# torch_version_range_test.sh CMAKE SOURCE_DIR PYTHON - cmake/MatexTorch.cmake
# refuses a torch outside the supported range, saying why: configures the
# project (CUDA, TensorFlow, tests and benchmarks off) with a Python that
# reports torch 2.10.0 and then 2.16.0, under MATEX_WITH_TORCH=auto (the
# backend is skipped, naming the version and the range) and =1 (the
# configure step fails with the same reason; pip's MATEX_WITH_TORCH=1), and once with the real torch
# (found, in range). Exits 77 (skipped) where PYTHON cannot import torch.
set -uo pipefail
cmake_bin=$1 source=$2 python=$3
"$python" -c "import torch" 2>/dev/null || { echo "SKIPPED: $python cannot import torch"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fails=0
configure() {  # configure NAME VERSION WITH_TORCH -> output in $work/NAME.log, status returned
  local name=$1 version=$2 with=$3
  local fake="$work/python-$name"  # one per step: steps of one version run at the same time
  cat > "$fake" <<SCRIPT
#!/usr/bin/env bash
# $python, except that cmake/MatexTorch.cmake's probe reads torch $version
if [[ "\$*" == *"import torch"* ]]; then
  "$python" "\$@" | sed '\$ s/.*/$version/'
  exit \${PIPESTATUS[0]}
fi
exec "$python" "\$@"
SCRIPT
  chmod +x "$fake"
  "$cmake_bin" -S "$source" -B "$work/$name" -DMATEX_WITH_CUDA=OFF -DMATEX_WITH_TF=OFF -DMATEX_BUILD_TESTS=OFF \
    -DMATEX_BUILD_BENCH=OFF -DMATEX_WITH_TORCH="$with" -DPython3_EXECUTABLE="$fake" > "$work/$name.log" 2>&1
}
expect() {  # expect WHAT LOG PATTERN
  if grep -q -- "$3" "$2"; then echo "ok: $1"; else echo "FAIL: $1: no '$3' in:"; cat "$2"; fails=$((fails + 1)); fi
}
# The configure steps do not depend on each other (each has its folder, fake Python and log): they run
# side by side. start NAME VERSION WITH_TORCH: one in the background, leaving its exit status in
# NAME.status; configured NAME: that status was 0.
start() { (configure "$@"; echo $? > "$work/$1.status") & }
configured() { [[ $(cat "$work/$1.status" 2>/dev/null) == 0 ]]; }
real=$("$python" -c "import torch; print(torch.__version__)")
for version in 2.10.0 2.16.0; do
  start "auto-$version" "$version+fake" auto
  start "on-$version" "$version+fake" 1
done
start misspelled "2.15.0+fake" maybe
start real "$real" AUTO
wait
for version in 2.10.0 2.16.0; do
  if configured "auto-$version"; then
    expect "AUTO skips torch $version" "$work/auto-$version.log" \
      "Skipping the PyTorch binding: PyTorch $version+fake .* is outside the supported range, 2.11 to below 2.16"
    expect "AUTO builds without torch $version" "$work/auto-$version.log" "Torch=OFF"
  else
    echo "FAIL: the configure step failed under auto with torch $version:"; cat "$work/auto-$version.log"; fails=$((fails + 1))
  fi
  if configured "on-$version"; then
    echo "FAIL: MATEX_WITH_TORCH=1 accepted torch $version"; fails=$((fails + 1))
  else
    expect "1 refuses torch $version" "$work/on-$version.log" "MATEX_WITH_TORCH=1 but PyTorch $version+fake"
  fi
done
# A spelling the switch does not know stops the configure step, naming it.
if configured misspelled; then
  echo "FAIL: MATEX_WITH_TORCH=maybe was accepted"; fails=$((fails + 1))
else
  expect "maybe is refused" "$work/misspelled.log" "MATEX_WITH_TORCH=maybe: use 1"
fi
if configured real; then
  expect "AUTO builds against torch $real" "$work/real.log" "Torch=ON"
else
  echo "FAIL: the configure step failed with torch $real:"; cat "$work/real.log"; fails=$((fails + 1))
fi
[ "$fails" -eq 0 ] && echo "PASS: the torch version range" || exit 1
