# MATEX_WITH_CUDA: AUTO finds the CUDA toolkit (nvcc included) and NCCL's
# header and uses them when all are present; ON fails the configure step when
# one is missing; OFF skips. Result: MATEX_HAVE_CUDA (ON/OFF) and, when ON, the
# CUDA language enabled, the imported target CUDA::cudart and
# MATEX_NCCL_INCLUDE_DIR.
#
# NCCL is not linked: libmatexcomm dlopen()s libnccl.so.2 when the GPU path
# first needs it (libmatexcomm/src/gpu/nccl_library.h says why: PyTorch bundles
# its own NCCL under the same soname). So only nccl.h is needed to build;
# libnccl.so.2 must be findable by the dynamic loader at run time.
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
  if(CUDAToolkit_FOUND AND CMAKE_CUDA_COMPILER AND MATEX_NCCL_INCLUDE_DIR)
    set(MATEX_HAVE_CUDA ON)
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES 80-real 90)
    endif()
    enable_language(CUDA)
    set(CMAKE_CUDA_STANDARD 17)
    set(CMAKE_CUDA_STANDARD_REQUIRED ON)
    message(STATUS "CUDA ${CUDAToolkit_VERSION} (${CMAKE_CUDA_COMPILER}, architectures "
                   "${CMAKE_CUDA_ARCHITECTURES}) and nccl.h (${MATEX_NCCL_INCLUDE_DIR}) found; "
                   "libnccl.so.2 is loaded at run time")
  elseif(MATEX_WITH_CUDA STREQUAL "ON")
    message(FATAL_ERROR "MATEX_WITH_CUDA=ON but the CUDA toolkit, nvcc or nccl.h was not found "
                        "(CUDAToolkit_FOUND=${CUDAToolkit_FOUND}, nvcc=${CMAKE_CUDA_COMPILER}, "
                        "nccl.h=${MATEX_NCCL_INCLUDE_DIR})")
  else()
    message(STATUS "CUDA, nvcc or nccl.h not found: building the CPU path only")
  endif()
endif()
