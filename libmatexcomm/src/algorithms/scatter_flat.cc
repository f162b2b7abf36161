// scatter_flat.cc - scatter and scatterv from a root as one MPI_Scatter(v).
//
// Steps: MPI_Scatter (equal counts) or MPI_Scatterv over all ranks in rank order.
// Cost:  linear or binomial tree: lg p alpha + (p-1)/p n beta at the root,
//        n = bytes scattered.
// Why flat is right here: the mirror image of gather; every block leaves the
//        root once and is needed by exactly one rank, so a hierarchy only adds
//        a copy at each node leader. See docs/algorithms.md.
// Preconditions: counts and displacements fit an int (checked by the caller).
#include "algorithms/algorithms.h"
#include "algorithms/flat_counts.h"
#include "core/mpi_handles.h"

namespace matexcomm {

void scatter_flat(const CollectiveContext& ctx, const void* send, void* recv, size_t count, matex_dtype_t dtype,
                  int root) {
  const MPI_Datatype type = MpiReductions::datatype(dtype);
  check_mpi(MPI_Scatter(send, static_cast<int>(count), type, recv == nullptr ? MPI_IN_PLACE : recv,
                        static_cast<int>(count), type, root, ctx.world),
            "MPI_Scatter");
}

void scatterv_flat(const CollectiveContext& ctx, const void* send, const std::vector<size_t>& counts,
                   const std::vector<size_t>& displs, void* recv, size_t recvcount, matex_dtype_t dtype, int root) {
  const MPI_Datatype type = MpiReductions::datatype(dtype);
  const std::vector<int> int_counts = to_int_array(counts);  // empty except at root
  const std::vector<int> int_displs = to_int_array(displs);
  check_mpi(MPI_Scatterv(send, int_counts.data(), int_displs.data(), type, recv == nullptr ? MPI_IN_PLACE : recv,
                         static_cast<int>(recvcount), type, root, ctx.world),
            "MPI_Scatterv");
}

}  // namespace matexcomm
