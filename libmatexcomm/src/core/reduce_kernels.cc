// reduce_kernels.cc - picks, once, the reduction loops compiled for the best
// instruction set this CPU supports (AVX-512, AVX2 or the generic x86-64 /
// portable build), and forwards every call to them.
#include "core/reduce_kernels.h"

namespace matexcomm {

#define MATEX_DECLARE_KERNELS(isa)                                                                          \
  namespace isa {                                                                                           \
  void reduce_sources(matex_dtype_t, matex_op_t, void*, const void* const*, int, size_t);                   \
  void divide_elements(matex_dtype_t, void*, size_t, int);                                                  \
  }
MATEX_DECLARE_KERNELS(generic)
#if defined(MATEX_KERNELS_X86)
MATEX_DECLARE_KERNELS(avx2)
MATEX_DECLARE_KERNELS(avx512)
#endif
#undef MATEX_DECLARE_KERNELS

namespace {

struct KernelSet {
  const char* name;
  void (*reduce_sources)(matex_dtype_t, matex_op_t, void*, const void* const*, int, size_t);
  void (*divide_elements)(matex_dtype_t, void*, size_t, int);
};

KernelSet choose_kernels() {
#if defined(MATEX_KERNELS_X86)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl")) {
    return {"avx512", avx512::reduce_sources, avx512::divide_elements};
  }
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    return {"avx2", avx2::reduce_sources, avx2::divide_elements};
  }
#endif
  return {"generic", generic::reduce_sources, generic::divide_elements};
}

const KernelSet& kernels() {
  static const KernelSet chosen = choose_kernels();
  return chosen;
}

}  // namespace

const char* reduce_kernel_isa() { return kernels().name; }

void reduce_sources(matex_dtype_t dtype, matex_op_t op, void* out, const void* const* srcs, int nsrc,
                    size_t count) {
  kernels().reduce_sources(dtype, op, out, srcs, nsrc, count);
}

void reduce_into(matex_dtype_t dtype, matex_op_t op, void* inout, const void* in, size_t count) {
  const void* srcs[2] = {inout, in};
  reduce_sources(dtype, op, inout, srcs, 2, count);
}

void divide_elements(matex_dtype_t dtype, void* data, size_t count, int divisor) {
  kernels().divide_elements(dtype, data, count, divisor);
}

}  // namespace matexcomm
