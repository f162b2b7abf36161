// allreduce_rab.cc - hierarchical allreduce for small messages: reduce to the
// node leader through shared memory, allreduce among the leaders with MPI,
// broadcast back through shared memory.
//
// Steps, per pipeline round of c = chunk_bytes/size elements:
//   1. every local rank copies its c elements into its shm slot;
//   2. local rank 0 reduces all q slots into the shared result, calls one
//      MPI_Allreduce of c elements among the N node leaders, divides for avg;
//   3. every local rank copies the result out.
// Bytes per rank: n in, n out; the leader also reads q n and sends
//   2(N-1)/N n on the wire.
// Cost: ~(q+2) n/B_mem + 2 lg N alpha (one MPI call per round instead of m
//   concurrent ones) + 2 flag waits per round. Wins while alpha dominates,
//   i.e. below MATEX_RAB_MAX_BYTES.
// Preconditions: none; any layout, a node of one rank skips shared memory.
#include <algorithm>

#include "algorithms/algorithms.h"
#include "core/dtype.h"
#include "core/reduce_kernels.h"

namespace matexcomm {

void allreduce_rab(const CollectiveContext& ctx, const AllreduceArgs& args) {
  const topo::Layout& layout = *ctx.layout;
  const size_t element = dtype_size(args.dtype);
  const size_t chunk = ctx.chunk_bytes / element;
  const bool across_nodes = layout.node_count > 1;
  const bool leader = layout.local_rank == 0;
  const CallDescriptor descriptor{args.sequence, args.count, args.dtype, args.op, args.algorithm_id,
                                  MATEX_COLL_ALLREDUCE};
  const char* in = static_cast<const char*>(args.send);
  char* out = static_cast<char*>(args.recv);

  if (args.count == 0 && ctx.shm != nullptr) ctx.shm->exchange_descriptor(descriptor);
  if (ctx.shm != nullptr) ctx.shm->reserve(args.count * element);
  for (size_t done = 0; done < args.count; done += chunk) {
    const size_t n = std::min(chunk, args.count - done);
    if (ctx.shm == nullptr) {  // alone on my node, hence its leader
      allreduce_round_alone(ctx, ctx.leaders, args, done, n);
      continue;
    }
    ShmNodeChannel& shm = *ctx.shm;
    const int q = shm.local_size();
    const uint64_t round = shm.stage_input(in + done * element, n * element, descriptor);
    if (leader) {
      char* target = shm.result(round);
      reduce_sources(args.dtype, args.op, target, shm.slots(round), q, n);
      if (across_nodes) {
        ShmNodeChannel::MpiSection in_mpi(shm);
        ctx.reductions->allreduce_in_place(ctx.leaders, target, n, args.dtype, args.op);
      }
      if (args.op == MATEX_AVG) divide_elements(args.dtype, target, n, layout.world_size);
      shm.mark_ready(round);
    }
    shm.wait_ready(round, 0, 1);
    shm.drain_result(round, out + done * element, n * element);
  }
}

}  // namespace matexcomm
