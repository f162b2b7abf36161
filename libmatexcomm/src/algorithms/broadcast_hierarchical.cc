// broadcast_hierarchical.cc - broadcast in two levels: across nodes among the
// node leaders, then inside each node.
//
// Steps: 1. if the root is not its node's leader, broadcast inside the root's
//           node (the leader and all its neighbours receive it);
//        2. the leaders (local rank 0 of each node) broadcast from the root's node;
//        3. every other node (and the root's node when the root is its leader)
//           broadcasts from its leader inside the node.
// Bytes: each node receives n across the network exactly once (a flat tree
//        over an arbitrary rank order may cross node boundaries many times).
// Cost:  Bcast(N, n) + Bcast(q, n): lg N + lg q alpha terms, the inner one
//        over MPI's shared-memory transport.
// Preconditions: none; nodes may have different sizes.
#include "algorithms/algorithms.h"

namespace matexcomm {

void broadcast_hierarchical(const CollectiveContext& ctx, void* buffer, size_t count, matex_dtype_t dtype,
                            int root) {
  const topo::Layout& layout = *ctx.layout;
  const int root_node = layout.node_of_rank[root];
  const int root_local = layout.local_rank_of_rank[root];
  const bool on_root_node = layout.node_index == root_node;
  if (on_root_node && root_local != 0) mpi_broadcast(ctx.node, buffer, count, dtype, root_local);
  if (layout.local_rank == 0) mpi_broadcast(ctx.leaders, buffer, count, dtype, root_node);
  if (!(on_root_node && root_local != 0)) mpi_broadcast(ctx.node, buffer, count, dtype, 0);
}

}  // namespace matexcomm
