# The framework releases the bindings are built and tested against (the
# matrix in docs/compatibility.md), in one place: MatexTensorFlow.cmake and
# MatexTorch.cmake skip a binding outside them and say why, and the ranges go
# into the package's build facts (matex/_build_info.json), where MATEX_ENABLE=1
# checks the running versions before it patches anything.
# Each range is MIN <= version < BELOW, on the release numbers (2.15.0+cu132 is 2.15.0).
set(MATEX_TF_MIN_VERSION 2.16)
set(MATEX_TF_BELOW_VERSION 2.22)
set(MATEX_KERAS_MIN_VERSION 3.0)
set(MATEX_KERAS_BELOW_VERSION 3.16)
set(MATEX_TORCH_MIN_VERSION 2.11)
set(MATEX_TORCH_BELOW_VERSION 2.16)

# matex_version_in_range(<out> <version text> <min> <below>): TRUE when the
# release part of the version lies in [min, below).
function(matex_version_in_range out text min below)
  string(REGEX MATCH "^[0-9]+\\.[0-9]+(\\.[0-9]+)?" release "${text}")
  if(release AND NOT release VERSION_LESS min AND release VERSION_LESS below)
    set(${out} TRUE PARENT_SCOPE)
  else()
    set(${out} FALSE PARENT_SCOPE)
  endif()
endfunction()

# matex_binding_skipped(<switch> <what> <why>): a binding that cannot be
# built: with <switch> at ON (1) the configure step, and so pip install,
# fails with the reason; otherwise it says it skips <what>, and why.
function(matex_binding_skipped switch what why)
  if(${switch} STREQUAL "ON")
    message(FATAL_ERROR "${switch}=1 but ${why}")
  endif()
  message(STATUS "Skipping the ${what}: ${why}")
endfunction()
