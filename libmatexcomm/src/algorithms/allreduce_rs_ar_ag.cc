// allreduce_rs_ar_ag.cc - hierarchical allreduce: shared-memory reduce-scatter
// inside the node, MPI allreduce of each shard across its rail (all rails at
// once), shared-memory allgather.
//
// Steps, per pipeline round of c = chunk_bytes/size elements (q = my node's
//        size, m = the smallest node's size, N = node count, p = world size):
//   1. every local rank copies its c elements into its shm slot;
//   2. local ranks 0..m-1 each reduce shard l (c/m elements) over the q slots
//      into the shared result, then MPI_Allreduce that shard across rail l
//      (the N ranks with local rank l), then divide by p for avg;
//   3. every local rank copies the whole result chunk out.
//   Rounds alternate between two buffer sets, so round t+1's copy-in overlaps
//   round t's copy-out.
// Bytes per rank: n copied in, n (q/m shards read) reduced, 2(N-1)/N n/m on
//   the wire, n copied out.
// Cost: ~3 n/B_mem + [2(N-1) alpha + 2(N-1)/N (n/m) beta] for the rails in
//   parallel; intra-node sync: 3 flag waits per round.
// Preconditions: none. Uneven layouts (3,1) use m = min node size rails, so a
//   node with more ranks leaves its extra ranks out of the rail step. A node of
//   one rank skips shared memory and calls MPI on its buffer directly.
#include <algorithm>
#include <vector>

#include "algorithms/algorithms.h"
#include "core/dtype.h"
#include "core/reduce_kernels.h"

namespace matexcomm {

void allreduce_rs_ar_ag(const CollectiveContext& ctx, const AllreduceArgs& args) {
  const topo::Layout& layout = *ctx.layout;
  const size_t element = dtype_size(args.dtype);
  const size_t chunk = ctx.chunk_bytes / element;
  const int owners = layout.min_local_size();
  const bool across_nodes = layout.node_count > 1;
  const CallDescriptor descriptor{args.sequence, args.count, args.dtype, args.op, args.algorithm_id,
                                  MATEX_COLL_ALLREDUCE};
  const char* in = static_cast<const char*>(args.send);
  char* out = static_cast<char*>(args.recv);

  if (args.count == 0 && ctx.shm != nullptr) ctx.shm->exchange_descriptor(descriptor);
  for (size_t done = 0; done < args.count; done += chunk) {
    const size_t n = std::min(chunk, args.count - done);
    const ElementRange shard = split_range(n, owners, std::min(layout.local_rank, owners - 1));
    const bool owner = layout.local_rank < owners;
    if (ctx.shm == nullptr) {
      allreduce_round_alone(ctx, ctx.rail, args, done, n);
      continue;
    }
    ShmNodeChannel& shm = *ctx.shm;
    const int q = shm.local_size();
    const uint64_t round = shm.stage_input(in + done * element, n * element, descriptor);
    if (owner) {
      char* target = shm.result(round) + shard.begin * element;
      std::vector<const void*> sources(q);
      for (int l = 0; l < q; ++l) sources[l] = shm.slot(round, l) + shard.begin * element;
      reduce_sources(args.dtype, args.op, target, sources.data(), q, shard.size());
      if (across_nodes && shard.size() > 0) {
        ShmNodeChannel::MpiSection in_mpi(shm);
        ctx.reductions->allreduce_in_place(ctx.rail, target, shard.size(), args.dtype, args.op);
      }
      if (args.op == MATEX_AVG) divide_elements(args.dtype, target, shard.size(), layout.world_size);
      shm.mark_ready(round);
    }
    shm.wait_ready(round, 0, owners);
    shm.drain_result(round, out + done * element, n * element);
  }
}

}  // namespace matexcomm
