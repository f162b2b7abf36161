// gpu_algorithms.h - collectives on device buffers (builds with CUDA only).
//
// They run on the caller's stream: each starts after the work already queued
// there and leaves its last step queued there. A step that needs the host (an
// MPI call across nodes) blocks the calling thread until it is done, so the
// call returns once every host step has run; the device results follow in
// stream order.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <functional>

#include "algorithms/collective_context.h"
#include "gpu/host_staging_pipeline.h"
#include "gpu/nccl_node_comm.h"

namespace matexcomm {

// What the device algorithms use besides the CollectiveContext.
struct GpuContext {
  gpu::NcclNodeComm* nccl = nullptr;            // the node's NCCL communicator (nccl_hier needs it)
  gpu::HostStagingPipeline* staging = nullptr;  // pinned buffers for an MPI that cannot take device memory
  bool cuda_aware_mpi = false;                  // identical on every rank
  cudaStream_t stream = nullptr;
  gpu::DeviceBuffer* scratch = nullptr;         // the rail ring's receive block
  gpu::PinnedBuffer* whole_copies = nullptr;    // [2], kept between calls: the whole-buffer staging's
                                                // host copies (cudaFreeHost per call would stall the GPU)
};

// NCCL reduce-scatter inside the node, MPI allreduce of each shard across its
// rail (device memory straight to a CUDA-aware MPI, else through the staging
// pipeline), NCCL allgather. Both buffers in device memory.
void gpu_allreduce_nccl_hier(const CollectiveContext& ctx, const GpuContext& gpu, const void* send, void* recv,
                             size_t count, matex_dtype_t dtype, matex_op_t op);

// Allreduce of device memory across `rail` with a CUDA-aware MPI: a ring of
// MPI_Sendrecv, reduced on the GPU (avg adds; the caller scales).
void gpu_rail_allreduce_ring(const GpuContext& gpu, MPI_Comm rail, char* data, size_t count, matex_dtype_t dtype,
                             matex_op_t op);

// NCCL broadcast on the root's node, MPI broadcast among the node leaders
// (direct or staged), NCCL broadcast on the other nodes.
void gpu_broadcast_nccl_hier(const CollectiveContext& ctx, const GpuContext& gpu, void* buffer, size_t count,
                             matex_dtype_t dtype, int root);

// ---- staged: any host algorithm on buffers of either kind ----
// The host collective the staged paths run on pinned copies.
struct HostCollectives {
  std::function<void(void* buffer, size_t count)> allreduce_in_place;     // dtype and op bound by the caller
  std::function<void(void* buffer, size_t count, int root)> broadcast;    // dtype bound
};

// The data moves through the staging pipeline chunk by chunk, each chunk one
// host allreduce (elementwise, so chunking changes nothing). send may be host
// or device memory; recv must be device memory.
void gpu_allreduce_staged(const GpuContext& gpu, const void* send, void* recv, size_t count, size_t element,
                          const HostCollectives& host);
// buffer in device memory; chunked like the allreduce.
void gpu_broadcast_staged(const GpuContext& gpu, void* buffer, size_t count, size_t element, int root, int my_rank,
                          const HostCollectives& host);

// Whole-buffer staging for collectives whose blocks do not chunk elementwise
// (allgather, reduce_scatter): `run` is called with host copies of the
// buffers; device inputs are copied down before it and device outputs up
// after it. Buffers of host memory are passed through untouched.
struct StagedBuffer {
  const void* user = nullptr;  // the caller's pointer (host or device)
  size_t bytes = 0;
  bool input = false;   // read by the collective
  bool output = false;  // written by the collective
};
void gpu_run_staged(const GpuContext& gpu, StagedBuffer* buffers, size_t n,
                    const std::function<void(void* const* host)>& run);

}  // namespace matexcomm
