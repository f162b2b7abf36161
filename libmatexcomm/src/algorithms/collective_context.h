// collective_context.h - everything an algorithm may use, handed to it by the
// communicator: the layout, the MPI sub-communicators, the shared-memory
// channel and the MPI spelling of reductions. Algorithms own no state.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "algorithms/buffer_pieces.h"
#include "algorithms/phase_clock.h"
#include "core/host_scratch.h"
#include "topology/layout.h"
#include "matexcomm/matexcomm.h"
#include "transport/mpi_reductions.h"
#include "transport/shm_node_channel.h"

namespace matexcomm {

struct CollectiveContext {
  const topo::Layout* layout = nullptr;
  MPI_Comm world = MPI_COMM_NULL;    // a private duplicate of the user's communicator
  MPI_Comm node = MPI_COMM_NULL;     // ranks of my node
  MPI_Comm rail = MPI_COMM_NULL;     // ranks with my local rank, one per node
  MPI_Comm leaders = MPI_COMM_NULL;  // local rank 0 of every node (null elsewhere); rank = node index
  ShmNodeChannel* shm = nullptr;     // null when alone on my node
  const MpiReductions* reductions = nullptr;
  bool hierarchical_ok = false;      // identical on every rank: shm works on every node with >1 rank
  size_t chunk_bytes = 0;            // identical on every rank; the shm pipeline step
  bool single_copy_ok = false;       // identical on every rank: every node can use cross-memory attach
  size_t single_copy_block_bytes = 0;  // rs_ar_ag_cma's step on a single node (MATEX_CMA_BLOCK_BYTES)
  HostScratch* scratch = nullptr;  // the communicator's reusable scratch memory
  PhaseTimes* phases = nullptr;          // where the time goes, when someone asks (the engine's timeline)
};

// At least `bytes` of the communicator's scratch memory (kept between calls,
// so large calls do not pay for fresh pages every time; not zeroed).
inline char* scratch_memory(const CollectiveContext& ctx, size_t bytes) {
  return ctx.scratch->reserve(bytes);
}

struct AllreduceArgs {
  const void* send = nullptr;  // == recv when in place
  void* recv = nullptr;
  size_t count = 0;
  matex_dtype_t dtype = MATEX_FLOAT32;
  matex_op_t op = MATEX_SUM;
  int algorithm_id = 0;  // carried in the shm call descriptor to catch mismatches
  uint64_t sequence = 0;  // the communicator's collective call number, likewise
  bool streaming = false;  // write the output with streaming stores (a large message)
  // Flat only: compare the call with the node's ranks in shared memory before
  // MPI's call (one node under auto, where that replaces the call check).
  bool meet_in_node = false;
  // A fused allreduce's tensors (send and recv above unused), `count` elements
  // in all. Only rs_ar_ag takes pieces; the communicator picks it for them.
  const BufferPiece* pieces = nullptr;
  size_t piece_count = 0;
};

// Elements [begin, end) of part `index` when `count` elements are cut into `parts` near-equal parts.
struct ElementRange {
  size_t begin = 0;
  size_t end = 0;
  size_t size() const { return end - begin; }
};
inline ElementRange split_range(size_t count, int parts, int index) {
  size_t base = count / parts;
  size_t extra = count % parts;
  size_t i = static_cast<size_t>(index);
  ElementRange range;
  range.begin = i * base + (i < extra ? i : extra);
  range.end = range.begin + base + (i < extra ? 1 : 0);
  return range;
}

// The round of a rank that is alone on its node: its own buffer is the node's
// result, so it copies in -> out, reduces across `across` (rail or leaders) with
// MPI when there are other nodes, and divides for avg. Used by the
// hierarchical allreduces so that such a rank makes the same MPI calls as its
// peers on bigger nodes.
void allreduce_round_alone(const CollectiveContext& ctx, MPI_Comm across, const AllreduceArgs& args, size_t offset,
                           size_t count);
// The same over elements [offset, offset + count) of `buffers` (pieces welcome).
void allreduce_round_alone(const CollectiveContext& ctx, MPI_Comm across, const AllreduceArgs& args,
                           const PieceWalker& buffers, size_t offset, size_t count);

}  // namespace matexcomm
