// reduce_flat.cc - reduce to a root as one MPI_Reduce over all ranks, then a
// division by p at the root for avg. Also the chunked MPI_Reduce the
// hierarchical version uses on its sub-communicators.
//
// Steps: MPI_Reduce over the world communicator (pieces of at most INT_MAX/2
//        elements); float16/bfloat16 through MpiReductions' user ops.
// Cost:  the MPI library's choice; binomial tree lg p (alpha + n beta + n
//        gamma) for small n, reduce_scatter + gather ~ 2 lg p alpha + 2 n beta
//        + n gamma for large n.
// Preconditions: none (any layout, any valid dtype/op pair).
#include <algorithm>
#include <climits>

#include "algorithms/algorithms.h"
#include "core/dtype.h"
#include "core/mpi_handles.h"
#include "core/reduce_kernels.h"

namespace matexcomm {

namespace {
constexpr size_t kMaxPieceElements = static_cast<size_t>(INT_MAX) / 2;
}  // namespace

void mpi_reduce(const CollectiveContext& ctx, MPI_Comm comm, const void* send, void* recv, size_t count,
                matex_dtype_t dtype, matex_op_t op, int root) {
  int rank = 0;
  check_mpi(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
  const size_t element = dtype_size(dtype);
  const MPI_Datatype type = MpiReductions::datatype(dtype);
  const MPI_Op mpi_op = ctx.reductions->op(dtype, op);
  for (size_t offset = 0; offset < count; offset += kMaxPieceElements) {
    const size_t n = std::min(kMaxPieceElements, count - offset);
    const void* piece_send = send == nullptr ? MPI_IN_PLACE : static_cast<const char*>(send) + offset * element;
    void* piece_recv = rank == root ? static_cast<char*>(recv) + offset * element : nullptr;
    check_mpi(MPI_Reduce(piece_send, piece_recv, static_cast<int>(n), type, mpi_op, root, comm), "MPI_Reduce");
  }
}

void reduce_flat(const CollectiveContext& ctx, const void* send, void* recv, size_t count, matex_dtype_t dtype,
                 matex_op_t op, int root) {
  mpi_reduce(ctx, ctx.world, send, recv, count, dtype, op, root);
  if (op == MATEX_AVG && ctx.layout->world_rank == root) {
    divide_elements(dtype, recv, count, ctx.layout->world_size);
  }
}

}  // namespace matexcomm
