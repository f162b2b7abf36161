// scale_kernel.cu - launch_scale and launch_batched_scale: data[i] *= factor on
// the GPU, with the CPU's arithmetic (engine/scaling.cc): float32 multiplies
// by (float)factor, float64 by factor, float16/bfloat16 widen to float32,
// multiply by (float)factor and round once to nearest even.
//
// Cost: one read and one write per element. A range first scales the few
// elements before its first 16-byte boundary one by one, then moves 16-byte
// vectors (several in flight per thread), then the tail. launch_scale is one
// grid-stride launch; launch_batched_scale cuts every tensor into chunks of
// kChunkBytes and strides the blocks over the chunks of up to
// kMaxScaleItemsPerLaunch tensors per launch, so big tensors get blocks in
// proportion to their size and small ones cost one chunk.
//
// Preconditions: device (or managed) pointers aligned to the element size;
// the tensors of one batch do not overlap.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>

#include "core/error.h"
#include "gpu/batch_chunks.cuh"
#include "gpu/cuda_check.h"
#include "gpu/device_kernels.h"
#include "gpu/half_float_device.cuh"

namespace matexcomm::gpu {

namespace {

constexpr int kThreads = 256;
constexpr size_t kMaxBlocks = 2048;          // about two waves of an H100/H200; the loops stride
constexpr size_t kChunkBytes = 16 * 1024;    // one block's share of a batched tensor at a time

template <class Storage, class ComputeType>
struct Native {
  using Store = Storage;
  using Compute = ComputeType;
  __device__ static Compute widen(Store value) { return value; }
  __device__ static Store narrow(Compute value) { return value; }
};
using Float32 = Native<float, float>;
using Float64 = Native<double, double>;


template <class T>
struct alignas(16) Lanes {
  static constexpr int kCount = 16 / sizeof(T);
  T value[kCount];
};
template <class T>
constexpr int kUnrollFor = sizeof(T) >= 4 ? 4 : static_cast<int>(sizeof(T));

// Scales data[0, count) with threads `thread`, `thread + stride`, ... of the
// caller's group; every thread of the group calls it with the same range.
template <class Format>
__device__ void scale_range(typename Format::Store* data, size_t count, typename Format::Compute factor,
                            size_t thread, size_t stride) {
  using T = typename Format::Store;
  using Vector = Lanes<T>;
  constexpr int kUnroll = kUnrollFor<T>;
  const size_t misalignment = reinterpret_cast<uintptr_t>(data) % 16;
  const size_t head = min(count, ((16 - misalignment) % 16) / sizeof(T));
  const size_t vectors = (count - head) / Vector::kCount;

  Vector* body = reinterpret_cast<Vector*>(data + head);
  for (size_t base = thread; base < vectors; base += stride * kUnroll) {
    Vector v[kUnroll];
#pragma unroll
    for (int k = 0; k < kUnroll; ++k) {
      if (base + k * stride < vectors) v[k] = body[base + k * stride];
    }
#pragma unroll
    for (int k = 0; k < kUnroll; ++k) {
      if (base + k * stride < vectors) {
#pragma unroll
        for (int lane = 0; lane < Vector::kCount; ++lane) {
          v[k].value[lane] = Format::narrow(Format::widen(v[k].value[lane]) * factor);
        }
        body[base + k * stride] = v[k];
      }
    }
  }

  const size_t body_end = head + vectors * Vector::kCount;
  const size_t scalars = head + (count - body_end);
  for (size_t e = thread; e < scalars; e += stride) {
    const size_t i = e < head ? e : body_end + (e - head);
    data[i] = Format::narrow(Format::widen(data[i]) * factor);
  }
}

template <class Format>
__global__ void __launch_bounds__(kThreads) scale_kernel(typename Format::Store* data, size_t count,
                                                         typename Format::Compute factor) {
  scale_range<Format>(data, count, factor, static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x,
                      static_cast<size_t>(gridDim.x) * blockDim.x);
}

// A launch's tensors; tensor i owns chunks [first_chunk[i], first_chunk[i + 1])
// (the last one up to chunk_count). Every listed tensor has at least one chunk.
struct ScaleBatch {
  ScaleItem items[kMaxScaleItemsPerLaunch];
  uint32_t first_chunk[kMaxScaleItemsPerLaunch];
  uint32_t item_count;
  uint32_t chunk_count;
};
static_assert(sizeof(ScaleBatch) < 4096, "kernel parameters must stay under 4 KiB");

template <class Format>
__global__ void __launch_bounds__(kThreads) batched_scale_kernel(const __grid_constant__ ScaleBatch batch) {
  using T = typename Format::Store;
  constexpr size_t kChunkElements = kChunkBytes / sizeof(T);
  for (uint32_t chunk = blockIdx.x; chunk < batch.chunk_count; chunk += gridDim.x) {
    const uint32_t low = item_of_chunk(batch.first_chunk, batch.item_count, chunk);
    const ScaleItem& item = batch.items[low];
    const size_t begin = static_cast<size_t>(chunk - batch.first_chunk[low]) * kChunkElements;
    const size_t end = min(item.count, begin + kChunkElements);
    scale_range<Format>(static_cast<T*>(item.data) + begin, end - begin,
                        static_cast<typename Format::Compute>(item.factor), threadIdx.x, blockDim.x);
  }
}

template <class Format>
void require_element_aligned(const void* data, const char* message) {
  MATEX_REQUIRE(reinterpret_cast<uintptr_t>(data) % sizeof(typename Format::Store) == 0, MATEX_ERR_INVALID_ARG,
                message);
}

template <class Format>
void launch_one(void* data, size_t count, double factor, cudaStream_t stream) {
  using T = typename Format::Store;
  require_element_aligned<Format>(data, "launch_scale: data must be aligned to the element size");
  const size_t per_thread = static_cast<size_t>(Lanes<T>::kCount) * kUnrollFor<T>;
  const size_t threads = (count + per_thread - 1) / per_thread;
  const size_t blocks = std::clamp<size_t>((threads + kThreads - 1) / kThreads, 1, kMaxBlocks);
  scale_kernel<Format><<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(
      static_cast<T*>(data), count, static_cast<typename Format::Compute>(factor));
  check_cuda(cudaGetLastError(), "scale_kernel launch");
}

template <class Format>
void launch_batch(const ScaleBatch& batch, cudaStream_t stream) {
  const size_t blocks = std::min<size_t>(batch.chunk_count, kMaxBlocks);
  batched_scale_kernel<Format><<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(batch);
  check_cuda(cudaGetLastError(), "batched_scale_kernel launch");
}

template <class Format>
void launch_many(const ScaleItem* items, size_t n, cudaStream_t stream) {
  constexpr size_t kChunkElements = kChunkBytes / sizeof(typename Format::Store);
  launch_in_batches<ScaleBatch>(
      items, n, kMaxScaleItemsPerLaunch,
      [](const ScaleItem& item) -> size_t {
        if (item.count == 0 || item.factor == 1.0) return 0;
        require_element_aligned<Format>(item.data, "launch_batched_scale: data must be aligned to the element size");
        return (item.count + kChunkElements - 1) / kChunkElements;
      },
      [&](const ScaleBatch& batch) { launch_batch<Format>(batch, stream); });
}

bool needs_work(const ScaleItem* items, size_t n) {
  return std::any_of(items, items + n, [](const ScaleItem& item) { return item.count > 0 && item.factor != 1.0; });
}

}  // namespace

void launch_scale(matex_dtype_t dtype, void* data, size_t count, double factor, cudaStream_t stream) {
  if (factor == 1.0 || count == 0) return;
  switch (dtype) {
    case MATEX_FLOAT16: return launch_one<Binary16>(data, count, factor, stream);
    case MATEX_BFLOAT16: return launch_one<BFloat16>(data, count, factor, stream);
    case MATEX_FLOAT32: return launch_one<Float32>(data, count, factor, stream);
    case MATEX_FLOAT64: return launch_one<Float64>(data, count, factor, stream);
    default: MATEX_RAISE(MATEX_ERR_INVALID_ARG, "launch_scale: scaling needs a floating dtype");
  }
}

void launch_batched_scale(matex_dtype_t dtype, const ScaleItem* items, size_t n, cudaStream_t stream) {
  if (n == 0 || !needs_work(items, n)) return;
  switch (dtype) {
    case MATEX_FLOAT16: return launch_many<Binary16>(items, n, stream);
    case MATEX_BFLOAT16: return launch_many<BFloat16>(items, n, stream);
    case MATEX_FLOAT32: return launch_many<Float32>(items, n, stream);
    case MATEX_FLOAT64: return launch_many<Float64>(items, n, stream);
    default: MATEX_RAISE(MATEX_ERR_INVALID_ARG, "launch_batched_scale: scaling needs a floating dtype");
  }
}

}  // namespace matexcomm::gpu
