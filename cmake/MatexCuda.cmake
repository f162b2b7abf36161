# MATEX_WITH_CUDA: AUTO finds the CUDA toolkit (nvcc included) and NCCL and
# uses them when all are present; ON fails the configure step when one is
# missing; OFF skips. Result: MATEX_HAVE_CUDA (ON/OFF) and, when ON, the CUDA
# language enabled, the imported targets CUDA::cudart and matex::nccl.
#
# Kernels are compiled for CMAKE_CUDA_ARCHITECTURES, by default 80 and 90
# (A100, H100/H200) plus PTX of 90 for newer GPUs; a machine with a GPU can pass
# -DCMAKE_CUDA_ARCHITECTURES=native.
set(MATEX_HAVE_CUDA OFF)
if(NOT MATEX_WITH_CUDA STREQUAL "OFF")
  include(CheckLanguage)
  find_package(CUDAToolkit QUIET)
  check_language(CUDA)
  find_path(MATEX_NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS})
  find_library(MATEX_NCCL_LIBRARY nccl HINTS ${CUDAToolkit_LIBRARY_DIR})
  if(CUDAToolkit_FOUND AND CMAKE_CUDA_COMPILER AND MATEX_NCCL_INCLUDE_DIR AND MATEX_NCCL_LIBRARY)
    set(MATEX_HAVE_CUDA ON)
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES 80-real 90)
    endif()
    enable_language(CUDA)
    set(CMAKE_CUDA_STANDARD 17)
    set(CMAKE_CUDA_STANDARD_REQUIRED ON)
    add_library(matex::nccl UNKNOWN IMPORTED)
    set_target_properties(matex::nccl PROPERTIES
      IMPORTED_LOCATION ${MATEX_NCCL_LIBRARY}
      INTERFACE_INCLUDE_DIRECTORIES ${MATEX_NCCL_INCLUDE_DIR})
    message(STATUS "CUDA ${CUDAToolkit_VERSION} (${CMAKE_CUDA_COMPILER}, architectures "
                   "${CMAKE_CUDA_ARCHITECTURES}) and NCCL (${MATEX_NCCL_LIBRARY}) found")
  elseif(MATEX_WITH_CUDA STREQUAL "ON")
    message(FATAL_ERROR "MATEX_WITH_CUDA=ON but the CUDA toolkit, nvcc or NCCL was not found "
                        "(CUDAToolkit_FOUND=${CUDAToolkit_FOUND}, nvcc=${CMAKE_CUDA_COMPILER}, "
                        "nccl.h=${MATEX_NCCL_INCLUDE_DIR}, libnccl=${MATEX_NCCL_LIBRARY})")
  else()
    message(STATUS "CUDA, nvcc or NCCL not found: building the CPU path only")
  endif()
endif()
