// allreduce_rs_ar_ag_cma.cc - hierarchical allreduce whose intra-node steps
// move data once, with cross-memory attach (process_vm_readv/writev), instead
// of twice through a shared segment.
//
// Steps (q = my node's size, m = the smallest node's size, N = node count,
//        p = world size, blocks of b = MATEX_CMA_BLOCK_BYTES on one node,
//        the rails' step MATEX_SHM_CHUNK_BYTES with several):
//   0. a data-less round publishes every rank's send/recv address and checks
//      the call descriptors (mismatches fail as in every shm algorithm);
//   1. local rank l < m owns shard l (n/m bytes; with several nodes, share l
//      of every b-sized round instead, so that the rail calls are the very ones
//      rs_ar_ag makes and nodes that picked different algorithms (auto picks
//      by placement for large messages) still combine the same elements).
//      Per block of its shard it
//      reads the block of every neighbour's send buffer into an L2-resident
//      scratch buffer, reduces them with its own send block into scratch,
//      MPI_Allreduces that block across rail l, divides for avg, and writes
//      the finished block into its own recv buffer (streaming stores for
//      large messages) and into every neighbour's. In place, the block is
//      reduced straight into my buffer (it is my send block, already cached),
//      and the neighbours' recv lines are the send lines I just read, so the
//      whole round trip stays in my cache;
//   2. a final flag round: nobody returns (and lets its buffers go) before
//      every owner is done with them.
// Bytes per owner and node: reads n/m of every local send buffer, writes
//   n/m into every local recv buffer: each byte crosses memory once per read
//   and once per write, against three times through a shared segment.
//   On the wire: 2(N-1)/N n/m per rail, all rails at once.
// Cost: ~ (q/m) n / B_mem + one syscall per neighbour per block +
//   2(N-1) alpha + 2(N-1)/N (n/m) beta + 2 flag rounds.
// Preconditions: every node can use cross-memory attach (probed when the
//   communicator is created; otherwise this algorithm is never selected).
//   In place is safe: a block of my buffer is read by its owner only, and
//   written by that owner after it has read that block of every rank.
#include <algorithm>
#include <cstring>
#include <vector>

#include "algorithms/algorithms.h"
#include "core/dtype.h"
#include "core/reduce_kernels.h"
#include "core/stream_copy.h"
#include "transport/cma_copy.h"

namespace matexcomm {

namespace {

// One block of the owner's shard: gather, reduce, cross nodes, scatter back.
void reduce_block(const CollectiveContext& ctx, ShmNodeChannel& shm, const AllreduceArgs& args, size_t first,
                  size_t count, char* scratch, size_t scratch_stride) {
  const size_t element = dtype_size(args.dtype);
  const size_t offset = first * element;
  const size_t bytes = count * element;
  const int q = shm.local_size();
  const int me = shm.local_rank();
  std::vector<const void*> sources;
  sources.push_back(static_cast<const char*>(args.send) + offset);
  for (int peer = 0, used = 0; peer < q; ++peer) {
    if (peer == me) continue;
    ShmNodeChannel::PeerBuffers theirs = shm.peer_buffers(peer);
    char* copy = scratch + scratch_stride * used++;
    PhaseTimer timer(ctx.phases, Phase::kGather);
    cma_read(theirs.pid, theirs.send + offset, copy, bytes);
    sources.push_back(copy);
  }
  char* target = static_cast<char*>(args.recv) + offset;
  // The block is finished straight in my recv buffer (in place: my send block,
  // already in cache), and written from there into every neighbour's. Only
  // when streaming stores take it to my recv buffer (large messages out of
  // place, whose recv lines are cold) is it finished in scratch first. Peers
  // read only my send buffer, and write only their own shards of my recv.
  const bool in_place = args.send == args.recv;
  const bool in_target = in_place || !args.streaming;
  char* finished = in_target ? target : scratch + scratch_stride * (q - 1);
  {
    PhaseTimer timer(ctx.phases, Phase::kReduce);
    reduce_sources(args.dtype, args.op, finished, sources.data(), q, count);
  }
  if (ctx.layout->node_count > 1) {
    PhaseTimer timer(ctx.phases, Phase::kRail);
    ShmNodeChannel::MpiSection in_mpi(shm);
    ctx.reductions->allreduce_in_place(ctx.rail, finished, count, args.dtype, args.op);
  }
  if (args.op == MATEX_AVG) divide_elements(args.dtype, finished, count, ctx.layout->world_size);
  PhaseTimer timer(ctx.phases, Phase::kScatter);
  if (!in_target) stream_copy(target, finished, bytes);
  for (int peer = 0; peer < q; ++peer) {
    if (peer == me) continue;
    ShmNodeChannel::PeerBuffers theirs = shm.peer_buffers(peer);
    cma_write(theirs.pid, theirs.recv + offset, finished, bytes);
  }
}

}  // namespace

void allreduce_rs_ar_ag_cma(const CollectiveContext& ctx, const AllreduceArgs& args) {
  const topo::Layout& layout = *ctx.layout;
  const int owners = layout.min_local_size();
  const size_t element = dtype_size(args.dtype);
  // One node: blocks of MATEX_CMA_BLOCK_BYTES. Several: the rails' steps.
  const size_t block =
      std::max<size_t>((layout.node_count == 1 ? ctx.single_copy_block_bytes : ctx.chunk_bytes) / element, 1);
  if (ctx.shm == nullptr) {  // alone on my node (so owners == 1): same blocks, rail MPI on my buffer
    for (size_t first = 0; first < args.count; first += block) {
      allreduce_round_alone(ctx, ctx.rail, args, first, std::min(block, args.count - first));
    }
    return;
  }
  ShmNodeChannel& shm = *ctx.shm;
  const CallDescriptor descriptor{args.sequence, args.count, args.dtype, args.op, args.algorithm_id,
                                  MATEX_COLL_ALLREDUCE};
  uint64_t round = 0;
  {
    PhaseTimer timer(ctx.phases, Phase::kWait);
    round = shm.expose_buffers(descriptor, args.send, args.recv);
  }
  if (layout.local_rank < owners && args.count > 0) {
    const size_t stride = block * element;
    char* scratch = scratch_memory(ctx, stride * shm.local_size());  // q-1 copies + the finished block
    if (layout.node_count == 1) {  // no rails: my shard is one contiguous range
      const ElementRange shard = split_range(args.count, owners, layout.local_rank);
      for (size_t first = shard.begin; first < shard.end; first += block) {
        reduce_block(ctx, shm, args, first, std::min(block, shard.end - first), scratch, stride);
      }
    } else {  // rail calls exactly as rs_ar_ag makes them: my share of every round
      for (size_t done = 0; done < args.count; done += block) {
        const ElementRange mine = split_range(std::min(block, args.count - done), owners, layout.local_rank);
        if (mine.size() > 0) reduce_block(ctx, shm, args, done + mine.begin, mine.size(), scratch, stride);
      }
    }
  }
  shm.mark_ready(round);
  PhaseTimer timer(ctx.phases, Phase::kWait);
  shm.wait_ready(round, 0, shm.local_size());
}

}  // namespace matexcomm
