// fake_device_kernels.cc - the CUDA kernels of device_kernels.h as CPU loops,
// for the CPU fake of the GPU path (see fake_cuda_runtime.cc). The real
// kernels are tested against host references in tests/gpu/test_device_kernels.cc.
#include <cstring>

#include "core/reduce_kernels.h"
#include "core/scaling.h"
#include "gpu/device_kernels.h"

namespace matexcomm::gpu {

void launch_reduce(matex_dtype_t dtype, matex_op_t op, void* dst, const void* src, size_t count, cudaStream_t) {
  if (count > 0) reduce_into(dtype, op, dst, src, count);
}

void launch_scale(matex_dtype_t dtype, void* data, size_t count, double factor, cudaStream_t) {
  scale_elements(dtype, data, count, factor);
}

void launch_batched_scale(matex_dtype_t dtype, const ScaleItem* items, size_t n, cudaStream_t) {
  for (size_t i = 0; i < n; ++i) scale_elements(dtype, items[i].data, items[i].count, items[i].factor);
}

void launch_batched_copy(const CopyItem* items, size_t n, cudaStream_t) {
  for (size_t i = 0; i < n; ++i) {
    if (items[i].bytes > 0) std::memmove(items[i].dst, items[i].src, items[i].bytes);
  }
}

}  // namespace matexcomm::gpu
