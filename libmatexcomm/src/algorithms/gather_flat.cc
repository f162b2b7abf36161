// gather_flat.cc - gather and gatherv to a root as one MPI_Gather(v).
//
// Steps: MPI_Gather (equal counts) or MPI_Gatherv over all ranks in rank order.
// Cost:  linear or binomial tree: lg p alpha + (p-1)/p n beta at the root,
//        n = bytes gathered; the root's link carries every byte it does not own.
// Why flat is right here: each rank's block must reach the root once whatever
//        the path, and nothing is combined on the way, so a two-level scheme
//        would only add a copy at every node leader. See docs/algorithms.md.
// Preconditions: counts and displacements fit an int (checked by the caller).
#include "algorithms/algorithms.h"
#include "algorithms/flat_counts.h"
#include "core/mpi_handles.h"

namespace matexcomm {

void gather_flat(const CollectiveContext& ctx, const void* send, void* recv, size_t count, matex_dtype_t dtype,
                 int root) {
  const MPI_Datatype type = MpiReductions::datatype(dtype);
  check_mpi(MPI_Gather(send == nullptr ? MPI_IN_PLACE : send, static_cast<int>(count), type, recv,
                       static_cast<int>(count), type, root, ctx.world),
            "MPI_Gather");
}

void gatherv_flat(const CollectiveContext& ctx, const void* send, size_t sendcount, void* recv,
                  const std::vector<size_t>& counts, const std::vector<size_t>& displs, matex_dtype_t dtype,
                  int root) {
  const MPI_Datatype type = MpiReductions::datatype(dtype);
  const std::vector<int> int_counts = to_int_array(counts);  // empty except at root
  const std::vector<int> int_displs = to_int_array(displs);
  check_mpi(MPI_Gatherv(send == nullptr ? MPI_IN_PLACE : send, static_cast<int>(sendcount), type, recv,
                        int_counts.data(), int_displs.data(), type, root, ctx.world),
            "MPI_Gatherv");
}

}  // namespace matexcomm
