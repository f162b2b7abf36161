// batched_copy_kernel.cu - launch_batched_copy: many device-to-device copies
// (packing tensors into a fusion buffer and back) in one launch per
// kMaxCopyItemsPerLaunch items, at close to cudaMemcpy bandwidth.
//
// Every item is cut into chunks of kChunkBytes; the launch's blocks (as many
// as the GPU holds at once) stride over all chunks of all items, so work is
// shared in proportion to the bytes and one huge item does not wait on a few
// blocks. A block finds its chunk's item by binary search in the batch, which
// travels as the kernel parameter (no upload).
//
// In a chunk, bytes before dst's first 16-byte boundary and after its last
// one are copied one by one; the rest is written as aligned 16-byte stores,
// several in flight per thread, read as 16-byte loads when src has the same
// offset modulo 16, as four 4-byte loads when it is off by a multiple of 4,
// and otherwise as five aligned 4-byte loads joined with funnel shifts. Those
// aligned loads may touch up to 3 bytes just outside src's range, but never
// an aligned 4-byte word without a byte of the range, so they cannot fault.
//
// Cost: one read and one write of every byte. Preconditions: device (or
// managed) pointers; the src and dst ranges of one item do not overlap, and
// no item's dst overlaps another item's src or dst.
#include <algorithm>
#include <atomic>
#include <cstdint>

#include "core/error.h"
#include "gpu/batch_chunks.cuh"
#include "gpu/cuda_check.h"
#include "gpu/device_kernels.h"

namespace matexcomm::gpu {

namespace {

constexpr int kThreads = 256;
constexpr int kUnroll = 4;  // 16-byte stores in flight per thread
constexpr size_t kChunkBytes = static_cast<size_t>(kThreads) * kUnroll * 16;  // 16 KiB
static_assert(kThreads >= 48, "copy_range copies head and tail bytes on threads 0..47");

// A launch's items; item i owns chunks [first_chunk[i], first_chunk[i + 1])
// (the last one up to chunk_count). Every listed item has at least one chunk.
struct CopyBatch {
  CopyItem items[kMaxCopyItemsPerLaunch];
  uint32_t first_chunk[kMaxCopyItemsPerLaunch];
  uint32_t item_count;
  uint32_t chunk_count;
};
static_assert(sizeof(CopyBatch) < 4096, "kernel parameters must stay under 4 KiB");

// 16 source bytes for one aligned destination vector, by the source's offset.
struct SameOffset {  // src 16-byte aligned too
  __device__ static uint4 load(const char* src) { return *reinterpret_cast<const uint4*>(src); }
};
struct WordOffset {  // src 4-byte aligned
  __device__ static uint4 load(const char* src) {
    const uint32_t* words = reinterpret_cast<const uint32_t*>(src);
    return make_uint4(words[0], words[1], words[2], words[3]);
  }
};
struct ByteOffset {  // src off by 1..3 bytes from a 4-byte boundary
  __device__ static uint4 load(const char* src) {
    const uint32_t offset = static_cast<uint32_t>(reinterpret_cast<uintptr_t>(src) & 3);
    const uint32_t* words = reinterpret_cast<const uint32_t*>(src - offset);  // stays a global pointer
    const uint32_t shift = offset * 8;
    uint32_t w[5];
#pragma unroll
    for (int k = 0; k < 5; ++k) w[k] = words[k];
    return make_uint4(__funnelshift_r(w[0], w[1], shift), __funnelshift_r(w[1], w[2], shift),
                      __funnelshift_r(w[2], w[3], shift), __funnelshift_r(w[3], w[4], shift));
  }
};

// dst[16 v, 16 v + 16) = src[16 v, ...) for v < vectors; dst is 16-byte aligned.
template <class Loader>
__device__ void copy_vectors(char* dst, const char* src, size_t vectors, size_t thread, size_t stride) {
  uint4* out = reinterpret_cast<uint4*>(dst);
  for (size_t base = thread; base < vectors; base += stride * kUnroll) {
    uint4 v[kUnroll];
#pragma unroll
    for (int k = 0; k < kUnroll; ++k) {
      if (base + k * stride < vectors) v[k] = Loader::load(src + 16 * (base + k * stride));
    }
#pragma unroll
    for (int k = 0; k < kUnroll; ++k) {
      if (base + k * stride < vectors) out[base + k * stride] = v[k];
    }
  }
}

// Copies [src, src + bytes) to dst with the threads of one block.
__device__ void copy_range(char* dst, const char* src, size_t bytes) {
  const size_t misalignment = reinterpret_cast<uintptr_t>(dst) % 16;
  const size_t head = min(bytes, (16 - misalignment) % 16);
  const size_t vectors = (bytes - head) / 16;
  const size_t body_end = head + 16 * vectors;
  const size_t tail = bytes - body_end;

  char* body_dst = dst + head;
  const char* body_src = src + head;
  const uintptr_t src_offset = reinterpret_cast<uintptr_t>(body_src) % 16;
  if (src_offset == 0) {
    copy_vectors<SameOffset>(body_dst, body_src, vectors, threadIdx.x, blockDim.x);
  } else if (src_offset % 4 == 0) {
    copy_vectors<WordOffset>(body_dst, body_src, vectors, threadIdx.x, blockDim.x);
  } else {
    copy_vectors<ByteOffset>(body_dst, body_src, vectors, threadIdx.x, blockDim.x);
  }

  // Head bytes on threads [0, 16), tail bytes on threads [32, 48) (another warp).
  const size_t t = threadIdx.x;
  if (t < head) dst[t] = src[t];
  if (t >= 32 && t - 32 < tail) dst[body_end + (t - 32)] = src[body_end + (t - 32)];
}

__global__ void __launch_bounds__(kThreads) batched_copy_kernel(const __grid_constant__ CopyBatch batch) {
  for (uint32_t chunk = blockIdx.x; chunk < batch.chunk_count; chunk += gridDim.x) {
    const uint32_t low = item_of_chunk(batch.first_chunk, batch.item_count, chunk);
    const CopyItem& item = batch.items[low];
    const size_t begin = static_cast<size_t>(chunk - batch.first_chunk[low]) * kChunkBytes;
    const size_t end = min(item.bytes, begin + kChunkBytes);
    copy_range(static_cast<char*>(item.dst) + begin, static_cast<const char*>(item.src) + begin, end - begin);
  }
}

// Blocks of batched_copy_kernel the current device runs at once, asked once
// per device.
size_t resident_blocks() {
  constexpr int kCachedDevices = 64;
  static std::atomic<int> known[kCachedDevices] = {};
  int device = 0;
  check_cuda(cudaGetDevice(&device), "cudaGetDevice");
  if (device >= 0 && device < kCachedDevices) {
    const int cached = known[device].load(std::memory_order_relaxed);
    if (cached > 0) return static_cast<size_t>(cached);
  }
  int processors = 0;
  check_cuda(cudaDeviceGetAttribute(&processors, cudaDevAttrMultiProcessorCount, device),
             "cudaDeviceGetAttribute(MultiProcessorCount)");
  int per_processor = 0;
  check_cuda(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_processor, batched_copy_kernel, kThreads, 0),
             "cudaOccupancyMaxActiveBlocksPerMultiprocessor(batched_copy_kernel)");
  const int blocks = std::max(1, processors) * std::max(1, per_processor);
  if (device >= 0 && device < kCachedDevices) known[device].store(blocks, std::memory_order_relaxed);
  return static_cast<size_t>(blocks);
}

void launch_batch(const CopyBatch& batch, size_t max_blocks, cudaStream_t stream) {
  const size_t blocks = std::min<size_t>(batch.chunk_count, max_blocks);
  batched_copy_kernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(batch);
  check_cuda(cudaGetLastError(), "batched_copy_kernel launch");
}

}  // namespace

void launch_batched_copy(const CopyItem* items, size_t n, cudaStream_t stream) {
  if (n == 0 || std::none_of(items, items + n, [](const CopyItem& item) { return item.bytes > 0; })) return;
  const size_t max_blocks = resident_blocks();
  launch_in_batches<CopyBatch>(
      items, n, kMaxCopyItemsPerLaunch,
      [](const CopyItem& item) { return (item.bytes + kChunkBytes - 1) / kChunkBytes; },
      [&](const CopyBatch& batch) { launch_batch(batch, max_blocks, stream); });
}

}  // namespace matexcomm::gpu
