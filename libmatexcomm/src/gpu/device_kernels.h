// device_kernels.h - the CUDA kernels of libmatexcomm, behind host functions
// that enqueue them on a stream and return at once (errors of the launch are
// raised as Error(MATEX_ERR_DEVICE); errors while running show up at the next
// synchronization).
//
// Every function accepts count/n == 0 (no launch). Pointers are device
// pointers (or managed memory); no alignment is required, aligned ones run
// with 16-byte loads and stores.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

#include "matexcomm/matexcomm.h"

namespace matexcomm::gpu {

// dst[i] = dst[i] op src[i] for i < count. Every dtype and op; MATEX_AVG adds
// (the caller scales once at the end). float16 and bfloat16 compute in float32
// and round once per element, as the CPU kernels do.
void launch_reduce(matex_dtype_t dtype, matex_op_t op, void* dst, const void* src, size_t count,
                   cudaStream_t stream);

// data[i] *= factor for i < count; floating dtypes only (float16/bfloat16 in
// float32, float64 in double). factor == 1 launches nothing.
void launch_scale(matex_dtype_t dtype, void* data, size_t count, double factor, cudaStream_t stream);

// One copy of a batched pack or unpack.
struct CopyItem {
  const void* src = nullptr;
  void* dst = nullptr;
  size_t bytes = 0;
};
// Items per launch: the batch travels as the kernel's parameter (no separate
// upload), which must stay under 4 KiB.
constexpr size_t kMaxCopyItemsPerLaunch = 128;

// Copies every item (src and dst of one item must not overlap), in one launch
// per kMaxCopyItemsPerLaunch items. Used to pack many tensors into a fusion
// buffer and unpack them again.
void launch_batched_copy(const CopyItem* items, size_t n, cudaStream_t stream);

// One tensor of a batched scale.
struct ScaleItem {
  void* data = nullptr;
  size_t count = 0;   // elements
  double factor = 1;  // items with factor 1 are skipped
};
constexpr size_t kMaxScaleItemsPerLaunch = 128;

// launch_scale for many tensors of one floating dtype, one launch per
// kMaxScaleItemsPerLaunch items.
void launch_batched_scale(matex_dtype_t dtype, const ScaleItem* items, size_t n, cudaStream_t stream);

}  // namespace matexcomm::gpu
