// reduce_kernels_avx2.cc - the reduction loops compiled for the avx2 instruction
// set (flags in libmatexcomm/CMakeLists.txt); see reduce_kernels_impl.h.
#define MATEX_KERNEL_ISA avx2
#include "core/reduce_kernels_impl.h"
