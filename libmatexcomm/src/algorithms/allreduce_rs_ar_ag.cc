// allreduce_rs_ar_ag.cc - hierarchical allreduce: shared-memory reduce-scatter
// inside the node, MPI allreduce of each shard across its rail (all rails at
// once), shared-memory allgather.
//
// Steps, per pipeline round of c = chunk_bytes/size elements (q = my node's
//        size, m = the smallest node's size, so local ranks 0..m-1 each own
//        one shard of c/m elements; N = node count, p = world size):
//   1. every local rank copies into its shm slot the shards that OTHER ranks
//      own (all of them on a non-owner); its own shard stays in its buffer;
//   2. owner l reduces shard l from its own send buffer and the q-1 slots
//      into the shared result, MPI_Allreduces it across rail l (the N ranks
//      with local rank l), divides by p for avg, and copies it to its recv
//      buffer;
//   3. every local rank copies the shards it does not own out of the result.
//   Large messages (MATEX_STREAMING_MIN_BYTES) reach the recv buffer through
//   streaming stores, which skip reading lines that are about to be replaced.
//   Rounds alternate between two buffer sets, so round t+1's copy-in overlaps
//   round t's copy-out, and c is small enough for a round to live in L2.
// Bytes per rank: the user's n bytes are read once and written once (like a
//   memcpy); the slots and the result add ((q-1)/q + 1) n of cache-resident
//   traffic, half of it between cores.
// Cost: ~ n/B_copy + 2(N-1) alpha + 2(N-1)/N (n/m) beta for the rails in
//   parallel + 3 flag waits per round.
// Preconditions: none. Uneven layouts (3,1) use m = min node size rails, so the
//   rails line up on every node and a bigger node's extra ranks only stage and
//   copy out. A node of one rank skips shared memory and reduces in place.
//   In place is safe: a rank stages every foreign shard before posting, and
//   the only part of its buffer written before copy-out is its own shard.
//   rs_ar_ag_cma makes the same rail calls (share l of every round), so two
//   nodes may run different ones of the pair in the same call.
// Pieces: the engine's zero-copy fusion passes a list of tensors instead of
//   one buffer (buffer_pieces.h). Rounds address elements of their
//   concatenation, and every copy and reduction is cut at tensor boundaries,
//   so a fused call moves exactly the bytes of one call on one buffer.
#include <algorithm>
#include <cstring>
#include <vector>

#include "algorithms/algorithms.h"
#include "algorithms/buffer_pieces.h"
#include "core/dtype.h"
#include "core/reduce_kernels.h"
#include "core/stream_copy.h"

namespace matexcomm {

namespace {

struct Round {
  const CollectiveContext& ctx;
  const AllreduceArgs& args;
  const PieceWalker& buffers;
  ShmNodeChannel& shm;
  size_t element;
  size_t first;  // first element of the round in the user's buffers
  size_t count;  // elements in the round
  int owners;

  ElementRange shard(int owner) const { return split_range(count, owners, owner); }

  // Step 1: the shards other ranks own, into my slot (offsets as in the buffer).
  void stage_foreign_shards(char* slot, int me) const {
    for (int owner = 0; owner < owners; ++owner) {
      if (owner == me) continue;
      ElementRange range = shard(owner);
      char* into = slot + range.begin * element;
      buffers.for_each(first + range.begin, range.size(), [&](const char* send, char*, size_t at, size_t n) {
        std::memcpy(into + at * element, send, n * element);
      });
    }
  }

  // Step 2, on owner `me`.
  void reduce_own_shard(uint64_t round, int me, std::vector<const void*>& sources) const {
    ElementRange range = shard(me);
    if (range.size() == 0) return;
    char* shared = shm.result(round) + range.begin * element;
    {
      PhaseTimer timer(ctx.phases, Phase::kReduce);
      buffers.for_each(first + range.begin, range.size(), [&](const char* send, char*, size_t at, size_t n) {
        const size_t offset = (range.begin + at) * element;
        sources.assign(1, send);
        for (int l = 0; l < shm.local_size(); ++l) {
          if (l != me) sources.push_back(shm.slot(round, l) + offset);
        }
        reduce_sources(args.dtype, args.op, shared + at * element, sources.data(), static_cast<int>(sources.size()),
                       n);
      });
    }
    if (ctx.layout->node_count > 1) {
      PhaseTimer timer(ctx.phases, Phase::kRail);
      ShmNodeChannel::MpiSection in_mpi(shm);
      ctx.reductions->allreduce_in_place(ctx.rail, shared, range.size(), args.dtype, args.op);
    }
    if (args.op == MATEX_AVG) divide_elements(args.dtype, shared, range.size(), ctx.layout->world_size);
    PhaseTimer timer(ctx.phases, Phase::kScatter);
    copy_out(shared, range);
  }

  // Elements `range` of the round, from `from` (laid out like the round) to the recv buffers.
  void copy_out(const char* from, ElementRange range) const {
    buffers.for_each(first + range.begin, range.size(), [&](const char*, char* recv, size_t at, size_t n) {
      if (args.streaming) stream_copy(recv, from + at * element, n * element);
      else std::memcpy(recv, from + at * element, n * element);
    });
  }

  // Step 3: the shards I do not own, out of the shared result.
  void copy_out_foreign_shards(uint64_t round, int me) const {
    for (int owner = 0; owner < owners; ++owner) {
      if (owner == me) continue;
      ElementRange range = shard(owner);
      copy_out(shm.result(round) + range.begin * element, range);
    }
  }
};

}  // namespace

void allreduce_rs_ar_ag(const CollectiveContext& ctx, const AllreduceArgs& args) {
  const topo::Layout& layout = *ctx.layout;
  const size_t element = dtype_size(args.dtype);
  const size_t chunk = ctx.chunk_bytes / element;
  const int owners = layout.min_local_size();
  const CallDescriptor descriptor{args.sequence, args.count, args.dtype, args.op, args.algorithm_id,
                                  MATEX_COLL_ALLREDUCE};
  if (args.count == 0 && ctx.shm != nullptr) ctx.shm->exchange_descriptor(descriptor);
  if (ctx.shm != nullptr) ctx.shm->reserve(args.count * element);
  const PieceWalker buffers = args.pieces != nullptr ? PieceWalker(args.pieces, args.piece_count, element)
                                                     : PieceWalker(args.send, args.recv, args.count, element);
  std::vector<const void*> sources;
  for (size_t done = 0; done < args.count; done += chunk) {
    const size_t n = std::min(chunk, args.count - done);
    if (ctx.shm == nullptr) {  // alone on my node: my buffer is the node's result
      allreduce_round_alone(ctx, ctx.rail, args, buffers, done, n);
      continue;
    }
    ShmNodeChannel& shm = *ctx.shm;
    const int me = shm.local_rank();
    const Round step{ctx, args, buffers, shm, element, done, n, owners};
    uint64_t round = 0;
    {  // begin_round stages (copy-in), then waits for the peers' posts (wait)
      PhaseSplit opening(ctx.phases, Phase::kWait);
      round = shm.begin_round(descriptor, [&](char* slot) {
        PhaseSplit::Part staging(opening, Phase::kGather);
        step.stage_foreign_shards(slot, me);
      });
    }
    if (me < owners) {
      step.reduce_own_shard(round, me, sources);
      shm.mark_ready(round);
    }
    {
      PhaseTimer timer(ctx.phases, Phase::kWait);
      shm.wait_ready(round, 0, owners);
    }
    PhaseTimer timer(ctx.phases, Phase::kScatter);
    step.copy_out_foreign_shards(round, me);
  }
}

}  // namespace matexcomm
