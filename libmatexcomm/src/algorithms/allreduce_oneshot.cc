// allreduce_oneshot.cc - allreduce of small messages on a single node: every
// rank publishes its data and reduces everybody's itself.
//
// Steps: 1. copy my n bytes into my shm slot and post the round (one flag);
//        2. wait for every local rank's post, then reduce all q inputs into my
//           recv buffer (and divide for avg).
// Bytes per rank: n in, q n read, n out. There is no second phase: a rank
//   that has seen every post of round t knows its neighbours finished reading
//   round t-2, so the buffer set is free again without another wait.
// Cost: one flag wait per call (alpha_shm) + q n / B_L1. Beats rab (two
//   waits) while q n is small; chosen up to MATEX_RAB_MAX_BYTES. Up to 24
//   bytes travel inside the flag's cache line, so a peer's post and data
//   arrive in one transfer.
// Preconditions: one node (node_count == 1); with several nodes rab is used.
#include <algorithm>

#include "algorithms/algorithms.h"
#include "core/dtype.h"
#include "core/reduce_kernels.h"

namespace matexcomm {

void allreduce_oneshot(const CollectiveContext& ctx, const AllreduceArgs& args) {
  if (ctx.shm == nullptr || ctx.layout->node_count > 1) {
    allreduce_rab(ctx, args);  // not applicable: a rank alone, or several nodes
    return;
  }
  ShmNodeChannel& shm = *ctx.shm;
  const size_t element = dtype_size(args.dtype);
  shm.reserve(args.count * element);
  const size_t chunk = ctx.chunk_bytes / element;
  const CallDescriptor descriptor{args.sequence, args.count, args.dtype, args.op, args.algorithm_id,
                                  MATEX_COLL_ALLREDUCE};
  if (args.count == 0) shm.exchange_descriptor(descriptor);
  const int q = shm.local_size();
  for (size_t done = 0; done < args.count; done += chunk) {
    const size_t n = std::min(chunk, args.count - done);
    const char* in = static_cast<const char*>(args.send) + done * element;
    // A few elements ride in the post's cache line: one transfer per peer, not two.
    const bool tiny = n * element <= ShmNodeChannel::kInlineBytes;
    const uint64_t round = tiny ? shm.stage_inline(in, n * element, descriptor)
                                : shm.stage_input(in, n * element, descriptor);
    char* out = static_cast<char*>(args.recv) + done * element;
    reduce_sources(args.dtype, args.op, out, tiny ? shm.inline_slots(round) : shm.slots(round), q, n);
    if (args.op == MATEX_AVG) divide_elements(args.dtype, out, n, ctx.layout->world_size);
    shm.mark_ready(round);
  }
}

}  // namespace matexcomm
