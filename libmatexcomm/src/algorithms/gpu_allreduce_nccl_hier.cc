// gpu_allreduce_nccl_hier.cc - hierarchical allreduce of device buffers: NCCL
// inside the node, MPI across nodes.
//
// Steps (q = my node's size, m = the smallest node's size, N = node count,
//        p = world size; shard l = elements split_range(count, m, l)):
//   1. reduce-scatter inside the node: local rank l < m gets shard l of the
//      node's sum in recv. One ncclReduceScatter when every node has m ranks
//      and m divides count; else one NCCL group of m ncclReduce calls (root l
//      for shard l), which also serves uneven layouts such as 3,1;
//   2. local rank l < m allreduces shard l across rail l (the N ranks with
//      local rank l): with a CUDA-aware MPI, a ring of MPI_Sendrecv on device
//      memory reduced on the GPU (gpu_rail_allreduce_ring.cc); else through
//      the pinned staging pipeline (D2H, MPI_Allreduce, H2D, chunk by chunk,
//      overlapped); avg scales the shard by 1/p on the device;
//   3. allgather inside the node: ncclAllGather in place, or one group of m
//      ncclBroadcast calls (root l for shard l).
//   On one node the whole call is one ncclAllReduce (and a scale for avg), and
//   it never blocks the host.
// Bytes per rank: NCCL moves 2(q-1)/q n inside the node; each rail moves
//   2(N-1)/N (n/m) across nodes, plus n/m each way over PCIe when staged.
// Cost: RS_nccl(q, n) + AR_mpi(N, n/m) (+ the staging copies, hidden behind it
//   by the pipeline but for one chunk) + AG_nccl(q, n).
// Preconditions: send and recv are device memory of the current GPU (in place
//   allowed); the node's NCCL communicator works; every rank calls with the
//   same count, dtype and op.
#include <algorithm>

#include "algorithms/gpu_algorithms.h"
#include "core/dtype.h"
#include "gpu/device_kernels.h"

namespace matexcomm {

namespace {

void reduce_shard_across_nodes(const CollectiveContext& ctx, const GpuContext& gpu, char* shard, size_t count,
                               matex_dtype_t dtype, matex_op_t op) {
  PhaseTimer timer(ctx.phases, Phase::kRail);
  if (gpu.cuda_aware_mpi) {
    gpu_rail_allreduce_ring(gpu, ctx.rail, shard, count, dtype, op);
    return;
  }
  const size_t element = dtype_size(dtype);
  gpu.staging->run(shard, count * element, gpu.stream, [&](char* host, size_t, size_t bytes) {
    ctx.reductions->allreduce_in_place(ctx.rail, host, bytes / element, dtype, op);
  });
}

}  // namespace

void gpu_allreduce_nccl_hier(const CollectiveContext& ctx, const GpuContext& gpu, const void* send, void* recv,
                             size_t count, matex_dtype_t dtype, matex_op_t op) {
  if (count == 0) return;
  const topo::Layout& layout = *ctx.layout;
  gpu::NcclNodeComm& nccl = *gpu.nccl;
  const double average = op == MATEX_AVG ? 1.0 / layout.world_size : 1.0;
  if (layout.node_count == 1) {
    nccl.allreduce(send, recv, count, dtype, op, gpu.stream);
    gpu::launch_scale(dtype, recv, count, average, gpu.stream);
    return;
  }
  const size_t element = dtype_size(dtype);
  const int me = layout.local_rank;
  const int owners = layout.min_local_size();
  const bool even = layout.local_size == owners && count % static_cast<size_t>(owners) == 0;
  const char* in = static_cast<const char*>(send);
  char* out = static_cast<char*>(recv);
  {  // 1. reduce-scatter inside the node
    PhaseTimer timer(ctx.phases, Phase::kReduce);
    if (even) {
      const size_t block = count / owners;
      nccl.reduce_scatter(in, out + me * block * element, block, dtype, op, gpu.stream);
    } else {
      gpu::NcclGroup group(nccl);
      for (int l = 0; l < owners; ++l) {
        const ElementRange shard = split_range(count, owners, l);
        nccl.reduce(in + shard.begin * element, out + shard.begin * element, shard.size(), dtype, op, l, gpu.stream);
      }
      group.finish();
    }
  }
  if (me < owners) {  // 2. my shard across my rail
    const ElementRange shard = split_range(count, owners, me);
    char* mine = out + shard.begin * element;
    reduce_shard_across_nodes(ctx, gpu, mine, shard.size(), dtype, op);
    gpu::launch_scale(dtype, mine, shard.size(), average, gpu.stream);
  }
  PhaseTimer timer(ctx.phases, Phase::kScatter);
  if (even) {  // 3. allgather inside the node
    const size_t block = count / owners;
    nccl.allgather(out + me * block * element, out, block, dtype, gpu.stream);
    return;
  }
  gpu::NcclGroup group(nccl);
  for (int l = 0; l < owners; ++l) {
    const ElementRange shard = split_range(count, owners, l);
    nccl.broadcast(out + shard.begin * element, out + shard.begin * element, shard.size(), dtype, l, gpu.stream);
  }
  group.finish();
}

}  // namespace matexcomm
