// reduce_kernels_generic.cc - the reduction loops compiled for the generic instruction
// set (flags in libmatexcomm/CMakeLists.txt); see reduce_kernels_impl.h.
#define MATEX_KERNEL_ISA generic
#include "core/reduce_kernels_impl.h"
