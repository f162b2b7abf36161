# What the build found, for `python -m matex doctor`, for MATEX_ENABLE=1's
# version check (matex/_build.py) and for the MPI loader (matex/_libraries.py):
# <build>/python/matex/_build_info.json, installed with the package
# (MatexWheel.cmake). One JSON object of strings; lists (MPI's libraries) are
# joined with ':'. Rewritten only when its text changes.

# matex_json_string(<out> <text>): <text> as a JSON string literal.
function(matex_json_string out text)
  string(REPLACE "\\" "\\\\" text "${text}")
  string(REPLACE "\"" "\\\"" text "${text}")
  string(REPLACE "\n" "\\n" text "${text}")
  string(REPLACE "\t" "\\t" text "${text}")
  set(${out} "\"${text}\"" PARENT_SCOPE)
endfunction()

function(matex_write_build_info path)
  string(REPLACE ";" ":" mpi_libraries "${MPI_C_LIBRARIES}")
  set(names version mpi_c_compiler mpi_libraries mpi_version hwloc hwloc_version cuda cuda_version
            nccl_include_dir tf tf_version keras_version tf_why torch torch_version torch_why python
            tf_range keras_range torch_range tf_xla)
  set(values "${PROJECT_VERSION}" "${MPI_C_COMPILER}" "${mpi_libraries}" "${MPI_C_VERSION}" "${MATEX_HAVE_HWLOC}"
             "${MATEX_HWLOC_VERSION}" "${MATEX_HAVE_CUDA}" "${CUDAToolkit_VERSION}" "${MATEX_NCCL_INCLUDE_DIR}"
             "${MATEX_HAVE_TF}" "${MATEX_TF_VERSION}" "${MATEX_KERAS_VERSION}" "${MATEX_TF_WHY}"
             "${MATEX_HAVE_TORCH}" "${MATEX_TORCH_VERSION}" "${MATEX_TORCH_WHY}" "${Python3_EXECUTABLE}"
             "${MATEX_TF_MIN_VERSION},${MATEX_TF_BELOW_VERSION}"
             "${MATEX_KERAS_MIN_VERSION},${MATEX_KERAS_BELOW_VERSION}"
             "${MATEX_TORCH_MIN_VERSION},${MATEX_TORCH_BELOW_VERSION}" "${MATEX_TF_XLA_STATE}")
  set(text "{\n")
  list(LENGTH names count)
  math(EXPR last "${count} - 1")
  foreach(index RANGE ${last})
    list(GET names ${index} name)
    list(GET values ${index} value)
    matex_json_string(quoted "${value}")
    string(APPEND text "  \"${name}\": ${quoted}")
    if(index LESS last)
      string(APPEND text ",")
    endif()
    string(APPEND text "\n")
  endforeach()
  string(APPEND text "}\n")
  set(old "")
  if(EXISTS "${path}")
    file(READ "${path}" old)
  endif()
  if(NOT old STREQUAL text)
    file(WRITE "${path}" "${text}")
  endif()
endfunction()
