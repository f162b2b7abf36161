# What the build found, for `python -m matex doctor` and for MATEX_ENABLE=1's
# version check: <build>/python/matex/_build_info.json, installed with the
# package. And, when scikit-build-core builds the wheel (pyproject.toml), the
# install rules that lay the wheel out:
#   matex-activate.pth         site-packages' startup hook (MATEX_ENABLE=1)
#   matex/                     the Python package (pyproject.toml lists it)
#     _matex_ops.so            the TensorFlow op library, when built
#     _build_info.json
#     lib/  include/  bin/     libmatexcomm, the interposer, the CMake package
#                              (lib/cmake/matexcomm), matexcomm.pc
#                              (lib/pkgconfig), the headers and the tools
#   matex_torch/               the PyTorch binding (its extension when built)
# The console scripts matexrun, matex-topo, matex-bench and matex-tune
# (pyproject.toml) run the tools in matex/bin.
function(matex_json_string out text)
  string(REPLACE "\\" "\\\\" text "${text}")
  string(REPLACE "\"" "\\\"" text "${text}")
  set(${out} "\"${text}\"" PARENT_SCOPE)
endfunction()

function(matex_write_build_info path)
  set(fields "")
  macro(field name value)
    matex_json_string(_quoted "${value}")
    list(APPEND fields "  \"${name}\": ${_quoted}")
  endmacro()
  field(version "${PROJECT_VERSION}")
  field(mpi_c_compiler "${MPI_C_COMPILER}")
  field(mpi_libraries "${MPI_C_LIBRARIES}")
  field(mpi_version "${MPI_C_VERSION}")
  field(hwloc "${MATEX_HAVE_HWLOC}")
  field(hwloc_version "${MATEX_HWLOC_VERSION}")
  field(cuda "${MATEX_HAVE_CUDA}")
  field(cuda_version "${CUDAToolkit_VERSION}")
  field(nccl_include_dir "${MATEX_NCCL_INCLUDE_DIR}")
  field(tf "${MATEX_HAVE_TF}")
  field(tf_version "${MATEX_TF_VERSION}")
  field(keras_version "${MATEX_KERAS_VERSION}")
  field(tf_why "${MATEX_TF_WHY}")
  field(torch "${MATEX_HAVE_TORCH}")
  field(torch_version "${MATEX_TORCH_VERSION}")
  field(torch_why "${MATEX_TORCH_WHY}")
  field(python "${Python3_EXECUTABLE}")
  field(tf_range "${MATEX_TF_MIN_VERSION},${MATEX_TF_BELOW_VERSION}")
  field(keras_range "${MATEX_KERAS_MIN_VERSION},${MATEX_KERAS_BELOW_VERSION}")
  field(torch_range "${MATEX_TORCH_MIN_VERSION},${MATEX_TORCH_BELOW_VERSION}")
  list(JOIN fields ",\n" body)
  file(CONFIGURE OUTPUT "${path}" CONTENT "{\n${body}\n}\n")
endfunction()
matex_write_build_info(${MATEX_PYTHON_PACKAGE_DIR}/_build_info.json)

if(NOT MATEX_PYTHON_WHEEL)
  return()
endif()
install(FILES ${PROJECT_SOURCE_DIR}/tf_integration/python/matex-activate.pth DESTINATION .)
install(FILES ${MATEX_PYTHON_PACKAGE_DIR}/_build_info.json DESTINATION matex)
if(MATEX_HAVE_TF)
  install(TARGETS matex_tf_ops LIBRARY DESTINATION matex)
endif()
if(MATEX_HAVE_TORCH)
  install(TARGETS matex_torch_extension LIBRARY DESTINATION matex_torch)
endif()
