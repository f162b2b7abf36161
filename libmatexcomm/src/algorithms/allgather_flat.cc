// allgather_flat.cc - allgather (variable counts) as one MPI_Allgatherv.
//
// Steps: MPI_Allgatherv over all ranks in world-rank order.
// Cost:  ring: (p-1) alpha + (p-1)/p n beta, n = total bytes gathered.
// Why flat is right here: every rank must receive the n(p-1)/p bytes it does
//        not own whatever the hierarchy, there is nothing to reduce, and with
//        nodes holding consecutive ranks a ring crosses each node boundary
//        once per step, which is what a two-level scheme would send too. See
//        docs/algorithms.md.
// Preconditions: every count and displacement fits in an int (checked by the caller).
#include <climits>

#include "algorithms/algorithms.h"
#include "core/error.h"
#include "core/mpi_handles.h"

namespace matexcomm {

void allgatherv_flat(const CollectiveContext& ctx, const void* send, void* recv, const std::vector<size_t>& counts,
                     const std::vector<size_t>& displs, matex_dtype_t dtype) {
  std::vector<int> int_counts(counts.size());
  std::vector<int> int_displs(displs.size());
  for (size_t r = 0; r < counts.size(); ++r) {
    int_counts[r] = static_cast<int>(counts[r]);
    int_displs[r] = static_cast<int>(displs[r]);
  }
  const int me = ctx.layout->world_rank;
  MPI_Datatype type = MpiReductions::datatype(dtype);
  check_mpi(MPI_Allgatherv(send == nullptr ? MPI_IN_PLACE : send, int_counts[me], type, recv, int_counts.data(),
                           int_displs.data(), type, ctx.world),
            "MPI_Allgatherv");
}

}  // namespace matexcomm
