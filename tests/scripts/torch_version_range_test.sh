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
  local fake="$work/python-$version"
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
for version in 2.10.0 2.16.0; do
  if configure "auto-$version" "$version+fake" auto; then
    expect "AUTO skips torch $version" "$work/auto-$version.log" \
      "Skipping the PyTorch binding: PyTorch $version+fake .* is outside the supported range, 2.11 to below 2.16"
    expect "AUTO builds without torch $version" "$work/auto-$version.log" "Torch=OFF"
  else
    echo "FAIL: the configure step failed under auto with torch $version:"; cat "$work/auto-$version.log"; fails=$((fails + 1))
  fi
  if configure "on-$version" "$version+fake" 1; then
    echo "FAIL: MATEX_WITH_TORCH=1 accepted torch $version"; fails=$((fails + 1))
  else
    expect "1 refuses torch $version" "$work/on-$version.log" "MATEX_WITH_TORCH=1 but PyTorch $version+fake"
  fi
done
# A spelling the switch does not know stops the configure step, naming it.
if configure misspelled "2.15.0+fake" maybe; then
  echo "FAIL: MATEX_WITH_TORCH=maybe was accepted"; fails=$((fails + 1))
else
  expect "maybe is refused" "$work/misspelled.log" "MATEX_WITH_TORCH=maybe: use 1"
fi
real=$("$python" -c "import torch; print(torch.__version__)")
if configure real "$real" AUTO; then
  expect "AUTO builds against torch $real" "$work/real.log" "Torch=ON"
else
  echo "FAIL: the configure step failed with torch $real:"; cat "$work/real.log"; fails=$((fails + 1))
fi
[ "$fails" -eq 0 ] && echo "PASS: the torch version range" || exit 1
