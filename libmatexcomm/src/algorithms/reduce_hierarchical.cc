// reduce_hierarchical.cc - reduce to a root in two levels: inside each node to
// its leader, across nodes among the leaders to the root's node, and a last
// hop inside the root's node when the root is not its leader.
//
// Steps: 1. every node reduces to its leader (local rank 0) over the node
//           communicator (MPI's shared-memory transport);
//        2. the leaders reduce to the leader of the root's node;
//        3. if the root is not that leader, the leader sends it the result.
// Bytes: each node sends n across the network once, in a tree over N nodes
//        (a flat tree over an arbitrary rank order may cross node boundaries
//        for every rank).
// Cost:  Reduce(q, n) + Reduce(N, n) [+ one n-byte copy inside the root's
//        node]: lg q + lg N alpha terms; the gamma work is done by the leaders.
// Why not through the shm channel: the channel is built for the all-ranks
//        allreduces; a rooted reduce needs only one destination per node, which
//        MPI_Reduce on the node communicator already serves in shared memory.
// Preconditions: none; nodes may have different sizes. Worth it when there is
//        more than one node and some node holds more than one rank
//        (reduce_prefers_hierarchy); avg is divided at the root.
#include <algorithm>
#include <climits>

#include "algorithms/algorithms.h"
#include "core/dtype.h"
#include "core/mpi_handles.h"
#include "core/reduce_kernels.h"

namespace matexcomm {

namespace {

constexpr int kLastHopTag = 0x6d72;  // the node communicator carries no other point-to-point traffic
constexpr size_t kMaxPieceCount = static_cast<size_t>(INT_MAX) / 2;

void send_in_pieces(MPI_Comm comm, const void* data, size_t count, matex_dtype_t dtype, int dest) {
  const size_t element = dtype_size(dtype);
  for (size_t offset = 0; offset < count; offset += kMaxPieceCount) {
    const int n = static_cast<int>(std::min(kMaxPieceCount, count - offset));
    check_mpi(MPI_Send(static_cast<const char*>(data) + offset * element, n, MpiReductions::datatype(dtype), dest,
                       kLastHopTag, comm),
              "MPI_Send (reduce's last hop)");
  }
}

void receive_in_pieces(MPI_Comm comm, void* data, size_t count, matex_dtype_t dtype, int source) {
  const size_t element = dtype_size(dtype);
  for (size_t offset = 0; offset < count; offset += kMaxPieceCount) {
    const int n = static_cast<int>(std::min(kMaxPieceCount, count - offset));
    check_mpi(MPI_Recv(static_cast<char*>(data) + offset * element, n, MpiReductions::datatype(dtype), source,
                       kLastHopTag, comm, MPI_STATUS_IGNORE),
              "MPI_Recv (reduce's last hop)");
  }
}

}  // namespace

bool reduce_prefers_hierarchy(const CollectiveContext& ctx) {
  return ctx.layout->node_count > 1 && ctx.layout->node_count < ctx.layout->world_size;
}

void reduce_hierarchical(const CollectiveContext& ctx, const void* send, void* recv, size_t count,
                         matex_dtype_t dtype, matex_op_t op, int root) {
  const topo::Layout& layout = *ctx.layout;
  const bool is_root = layout.world_rank == root;
  const int root_node = layout.node_of_rank[root];
  const bool root_is_leader = layout.local_rank_of_rank[root] == 0;
  const bool leader = layout.local_rank == 0;
  const void* input = send != nullptr ? send : recv;  // in place only at root
  const bool alone = layout.local_size == 1;
  // Where a leader keeps its node's partial result: the root's own buffer, the
  // input itself when the leader is alone on a node without the root, or scratch.
  void* node_result = nullptr;
  if (leader && is_root) node_result = recv;
  else if (leader && !alone) node_result = scratch_memory(ctx, count * dtype_size(dtype));
  const void* contribution = alone && !is_root ? input : node_result;

  if (!alone) {
    const bool into_own_input = leader && node_result == input;
    mpi_reduce(ctx, ctx.node, into_own_input ? nullptr : input, node_result, count, dtype, op, 0);
  } else if (is_root && input != recv) {
    std::copy_n(static_cast<const char*>(input), count * dtype_size(dtype), static_cast<char*>(recv));
  }
  if (leader && layout.node_count > 1) {
    // In place at the root's leader, whose partial result already sits where the total goes.
    const bool receives = layout.node_index == root_node;
    mpi_reduce(ctx, ctx.leaders, receives ? nullptr : contribution, node_result, count, dtype, op, root_node);
  }
  if (!root_is_leader && layout.node_index == root_node) {
    if (leader) send_in_pieces(ctx.node, node_result, count, dtype, layout.local_rank_of_rank[root]);
    if (is_root) receive_in_pieces(ctx.node, recv, count, dtype, 0);
  }
  if (op == MATEX_AVG && is_root) divide_elements(dtype, recv, count, layout.world_size);
}

}  // namespace matexcomm
