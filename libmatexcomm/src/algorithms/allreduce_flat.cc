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
// Under auto on one node with a shared-memory channel (args.meet_in_node)
//        there is no call check: first a data-less round compares the call
//        with the node's other ranks, as the hierarchical algorithms do in
//        theirs. A rank whose size auto's table gives to another algorithm
//        then gets MATEX_ERR_MISMATCH, where it would otherwise wait in
//        shared memory while this one waited inside MPI. A forced flat runs
//        on every rank, so it keeps the call check (and its carried calls).
#include "algorithms/algorithms.h"
#include "core/reduce_kernels.h"

namespace matexcomm {

void allreduce_flat(const CollectiveContext& ctx, const AllreduceArgs& args) {
  if (args.meet_in_node && ctx.shm != nullptr) {
    ctx.shm->exchange_descriptor(
        CallDescriptor{args.sequence, args.count, args.dtype, args.op, args.algorithm_id, MATEX_COLL_ALLREDUCE});
  }
  const bool in_place = args.send == args.recv;
  ctx.reductions->allreduce(ctx.world, in_place ? nullptr : args.send, args.recv, args.count, args.dtype, args.op);
  if (args.op == MATEX_AVG) divide_elements(args.dtype, args.recv, args.count, ctx.layout->world_size);
}

}  // namespace matexcomm
