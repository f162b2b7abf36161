// gpu_broadcast_nccl_hier.cc - hierarchical broadcast of a device buffer.
//
// Steps (R = the root's node, N = node count):
//   1. on node R: ncclBroadcast from the root's local rank, so that node R's
//      leader (local rank 0) holds the data;
//   2. the leaders broadcast across nodes with MPI from R's leader: straight
//      from device memory when MPI is CUDA-aware, else through the staging
//      pipeline (the sender only copies down, the receivers only up);
//   3. on every other node: ncclBroadcast from the leader.
//   On one node only step 1 runs, without blocking the host.
// Bytes per rank: n inside the node (NCCL), n across nodes per leader.
// Cost: B_nccl(q_R, n) + B_mpi(N, n) (+ one staging chunk) + B_nccl(q, n).
// Preconditions: buffer is device memory; the node's NCCL communicator works.
#include "algorithms/gpu_algorithms.h"
#include "core/dtype.h"
#include "gpu/cuda_check.h"

namespace matexcomm {

void gpu_broadcast_nccl_hier(const CollectiveContext& ctx, const GpuContext& gpu, void* buffer, size_t count,
                             matex_dtype_t dtype, int root) {
  if (count == 0) return;
  const topo::Layout& layout = *ctx.layout;
  gpu::NcclNodeComm& nccl = *gpu.nccl;
  const int root_node = layout.node_of_rank[root];
  const bool on_root_node = layout.node_index == root_node;
  if (on_root_node) {  // 1.
    PhaseTimer timer(ctx.phases, Phase::kGather);
    nccl.broadcast(buffer, buffer, count, dtype, layout.local_rank_of_rank[root], gpu.stream);
  }
  if (layout.node_count == 1) return;
  if (layout.local_rank == 0) {  // 2. leaders only; the leaders communicator is ranked by node index
    PhaseTimer timer(ctx.phases, Phase::kRail);
    const size_t bytes = count * dtype_size(dtype);
    if (gpu.cuda_aware_mpi) {
      gpu::check_cuda(cudaStreamSynchronize(gpu.stream), "cudaStreamSynchronize before a CUDA-aware MPI call");
      mpi_broadcast(ctx.leaders, buffer, bytes, MATEX_UINT8, root_node);
    } else {
      gpu::HostStagingPipeline::Directions directions{on_root_node, !on_root_node};
      gpu.staging->run(
          buffer, bytes, gpu.stream,
          [&](char* host, size_t, size_t chunk) { mpi_broadcast(ctx.leaders, host, chunk, MATEX_UINT8, root_node); },
          directions);
    }
  }
  if (!on_root_node) {  // 3.
    PhaseTimer timer(ctx.phases, Phase::kScatter);
    nccl.broadcast(buffer, buffer, count, dtype, 0, gpu.stream);
  }
}

}  // namespace matexcomm
