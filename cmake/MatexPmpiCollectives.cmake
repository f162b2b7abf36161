# matex_call_pmpi_collectives(<target>...): the C++ sources of each target call
# the PMPI_ names of the collectives that the MPI interposer defines
# (libmatexcomm/src/core/pmpi_collectives.h says why). Every target whose code
# ends up in libmatexcomm.so takes it.
function(matex_call_pmpi_collectives)
  foreach(target IN LISTS ARGN)
    target_compile_options(${target} PRIVATE
      "$<$<COMPILE_LANGUAGE:CXX>:SHELL:-include ${PROJECT_SOURCE_DIR}/libmatexcomm/src/core/pmpi_collectives.h>")
  endforeach()
endfunction()
