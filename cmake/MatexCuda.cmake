# MATEX_WITH_CUDA: AUTO finds the CUDA toolkit and NCCL and uses them when both
# are present; ON fails the configure step when either is missing; OFF skips.
# Result: MATEX_HAVE_CUDA (ON/OFF) and, when ON, the imported targets
# CUDA::cudart and matex::nccl.
set(MATEX_HAVE_CUDA OFF)
if(NOT MATEX_WITH_CUDA STREQUAL "OFF")
  find_package(CUDAToolkit QUIET)
  find_path(MATEX_NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS})
  find_library(MATEX_NCCL_LIBRARY nccl HINTS ${CUDAToolkit_LIBRARY_DIR})
  if(CUDAToolkit_FOUND AND MATEX_NCCL_INCLUDE_DIR AND MATEX_NCCL_LIBRARY)
    set(MATEX_HAVE_CUDA ON)
    add_library(matex::nccl UNKNOWN IMPORTED)
    set_target_properties(matex::nccl PROPERTIES
      IMPORTED_LOCATION ${MATEX_NCCL_LIBRARY}
      INTERFACE_INCLUDE_DIRECTORIES ${MATEX_NCCL_INCLUDE_DIR})
    message(STATUS "CUDA ${CUDAToolkit_VERSION} and NCCL (${MATEX_NCCL_LIBRARY}) found")
  elseif(MATEX_WITH_CUDA STREQUAL "ON")
    message(FATAL_ERROR "MATEX_WITH_CUDA=ON but the CUDA toolkit or NCCL was not found "
                        "(CUDAToolkit_FOUND=${CUDAToolkit_FOUND}, nccl.h=${MATEX_NCCL_INCLUDE_DIR}, "
                        "libnccl=${MATEX_NCCL_LIBRARY})")
  else()
    message(STATUS "CUDA or NCCL not found: building the CPU path only")
  endif()
endif()
