// reduce_kernels_avx512.cc - the reduction loops compiled for the avx512 instruction
// set (flags in libmatexcomm/CMakeLists.txt); see reduce_kernels_impl.h.
#define MATEX_KERNEL_ISA avx512
#include "core/reduce_kernels_impl.h"
