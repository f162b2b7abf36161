// allreduce_flat.cc - allreduce as one MPI_Allreduce over all ranks.
//
// Steps: MPI_Allreduce(send, recv) over the world communicator (split into
//        pieces of at most INT_MAX/2 elements), then divide by p for avg.
// Cost:  whatever the MPI library picks; for its ring,
//        2(p-1) alpha + 2(p-1)/p n beta + (p-1)/p n gamma.
// Preconditions: none (any layout, any dtype/op). It is the reference the
//        hierarchical algorithms are measured against, and the fallback when
//        shared memory is unavailable. Where the call check runs, calls of at
//        most kCarriedMaxBytes do not come here: their data rides in the
//        check's exchange (comm/call_agreement.h, Communicator::allreduce).
#include "algorithms/algorithms.h"
#include "core/reduce_kernels.h"

namespace matexcomm {

void allreduce_flat(const CollectiveContext& ctx, const AllreduceArgs& args) {
  const bool in_place = args.send == args.recv;
  ctx.reductions->allreduce(ctx.world, in_place ? nullptr : args.send, args.recv, args.count, args.dtype, args.op);
  if (args.op == MATEX_AVG) divide_elements(args.dtype, args.recv, args.count, ctx.layout->world_size);
}

}  // namespace matexcomm
