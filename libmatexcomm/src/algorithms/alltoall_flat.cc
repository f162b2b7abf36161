// alltoall_flat.cc - alltoall and alltoallv as one MPI_Alltoall(v).
//
// Steps: MPI_Alltoall (equal blocks) or MPI_Alltoallv over all ranks.
// Cost:  pairwise exchange: (p-1) alpha + (p-1)/p n beta per rank, n = bytes
//        each rank sends.
// Why flat is right here: every block has one sender and one receiver, so
//        each byte crosses the network (or the node's shared memory) once on
//        any path; routing through node leaders would add two copies and make
//        the leaders' links carry their whole node's traffic. See
//        docs/algorithms.md.
// Preconditions: the buffers do not overlap; counts and displacements fit an
//        int (checked by the caller).
#include "algorithms/algorithms.h"
#include "algorithms/flat_counts.h"
#include "core/mpi_handles.h"

namespace matexcomm {

void alltoall_flat(const CollectiveContext& ctx, const void* send, void* recv, size_t count, matex_dtype_t dtype) {
  const MPI_Datatype type = MpiReductions::datatype(dtype);
  check_mpi(MPI_Alltoall(send, static_cast<int>(count), type, recv, static_cast<int>(count), type, ctx.world),
            "MPI_Alltoall");
}

void alltoallv_flat(const CollectiveContext& ctx, const void* send, const std::vector<size_t>& sendcounts,
                    const std::vector<size_t>& sdispls, void* recv, const std::vector<size_t>& recvcounts,
                    const std::vector<size_t>& rdispls, matex_dtype_t dtype) {
  const MPI_Datatype type = MpiReductions::datatype(dtype);
  const std::vector<int> scounts = to_int_array(sendcounts);
  const std::vector<int> sdisp = to_int_array(sdispls);
  const std::vector<int> rcounts = to_int_array(recvcounts);
  const std::vector<int> rdisp = to_int_array(rdispls);
  check_mpi(MPI_Alltoallv(send, scounts.data(), sdisp.data(), type, recv, rcounts.data(), rdisp.data(), type,
                          ctx.world),
            "MPI_Alltoallv");
}

}  // namespace matexcomm
