// broadcast_flat.cc - broadcast as one MPI_Bcast over all ranks.
//
// Steps: MPI_Bcast from root (pieces of at most INT_MAX/2 elements).
// Cost:  the MPI library's choice; binomial tree lg p alpha + lg p n beta for
//        small n, scatter+allgather ~ 2 lg p alpha + 2 n beta for large n.
// Preconditions: none.
#include "algorithms/algorithms.h"

namespace matexcomm {

void broadcast_flat(const CollectiveContext& ctx, void* buffer, size_t count, matex_dtype_t dtype, int root) {
  mpi_broadcast(ctx.world, buffer, count, dtype, root);
}

}  // namespace matexcomm
