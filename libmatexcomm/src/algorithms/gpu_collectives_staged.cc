// gpu_collectives_staged.cc - any host algorithm on device buffers, through
// pinned host memory.
//
// Allreduce and broadcast are elementwise, so they go through the staging
// pipeline chunk by chunk (each chunk one host collective, overlapped with
// the copies of the chunks around it). Allgather and reduce_scatter move
// blocks whose placement depends on the rank count, so they copy each device
// buffer whole into pinned memory, run the host collective there, and copy
// the outputs back.
// Cost: chunked: ~ max(copies, host collectives) + one chunk's copies; whole:
//   inputs' D2H + the host collective + outputs' H2D, one after the other.
// Preconditions: every rank runs the same chunking (the same chunk size,
//   MATEX_CUDA_STAGING_CHUNK_BYTES, is agreed on), so chunk k meets chunk k.
#include <vector>

#include "algorithms/gpu_algorithms.h"
#include "core/error.h"
#include "gpu/cuda_check.h"
#include "gpu/cuda_resources.h"
#include "gpu/device_pointer.h"

namespace matexcomm {

void gpu_allreduce_staged(const GpuContext& gpu, const void* send, void* recv, size_t count, size_t element,
                          const HostCollectives& host) {
  if (count == 0) return;
  const size_t bytes = count * element;
  if (send != recv) {  // the pipeline works in place on recv
    gpu::check_cuda(cudaMemcpyAsync(recv, send, bytes, cudaMemcpyDefault, gpu.stream), "cudaMemcpyAsync to recvbuf");
  }
  gpu.staging->run(recv, bytes, gpu.stream,
                   [&](char* chunk, size_t, size_t chunk_bytes) { host.allreduce_in_place(chunk, chunk_bytes / element); });
}

void gpu_broadcast_staged(const GpuContext& gpu, void* buffer, size_t count, size_t element, int root, int my_rank,
                          const HostCollectives& host) {
  if (count == 0) return;
  const bool sender = my_rank == root;
  gpu::HostStagingPipeline::Directions directions{sender, !sender};
  gpu.staging->run(
      buffer, count * element, gpu.stream,
      [&](char* chunk, size_t, size_t chunk_bytes) { host.broadcast(chunk, chunk_bytes / element, root); },
      directions);
}

void gpu_run_staged(const GpuContext& gpu, StagedBuffer* buffers, size_t n,
                    const std::function<void(void* const* host)>& run) {
  MATEX_REQUIRE(n <= 2, MATEX_ERR_INTERNAL, "gpu_run_staged takes at most two buffers");
  gpu::PinnedBuffer* pinned = gpu.whole_copies;
  std::vector<void*> host(n, nullptr);
  for (size_t i = 0; i < n; ++i) {
    StagedBuffer& b = buffers[i];
    if (gpu::memory_kind(b.user) != gpu::MemoryKind::kDevice) {
      host[i] = const_cast<void*>(b.user);
      continue;
    }
    host[i] = pinned[i].reserve(b.bytes);
    // Outputs come down too: the collective may leave parts unwritten (gaps
    // between allgatherv blocks), and the copy back must not clobber them.
    if ((b.input || b.output) && b.bytes > 0) {
      gpu::check_cuda(cudaMemcpyAsync(host[i], b.user, b.bytes, cudaMemcpyDeviceToHost, gpu.stream),
                      "cudaMemcpyAsync of a staged buffer to the host");
    }
  }
  gpu::check_cuda(cudaStreamSynchronize(gpu.stream), "cudaStreamSynchronize before a staged host collective");
  run(host.data());
  for (size_t i = 0; i < n; ++i) {
    StagedBuffer& b = buffers[i];
    if (!b.output || b.bytes == 0 || host[i] == b.user) continue;
    gpu::check_cuda(cudaMemcpyAsync(const_cast<void*>(b.user), host[i], b.bytes, cudaMemcpyHostToDevice, gpu.stream),
                    "cudaMemcpyAsync of a staged output");
  }
  // The pinned copies are reused by the next call: the copies out of them must be done.
  gpu::check_cuda(cudaStreamSynchronize(gpu.stream), "cudaStreamSynchronize after a staged host collective");
}

}  // namespace matexcomm
