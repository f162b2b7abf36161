// reduce_scatter_flat.cc - reduce_scatter (equal blocks) as one
// MPI_Reduce_scatter_block, then a division by p for avg.
//
// Cost:  ring: (p-1) alpha + (p-1)/p n beta + (p-1)/p n gamma.
// Why flat for now: it already moves the minimum (p-1)/p n bytes per rank; a
//        shared-memory version would only speed up the gamma term inside a
//        node. See docs/algorithms.md.
// Preconditions: recvcount fits in an int (checked by the caller).
#include "algorithms/algorithms.h"
#include "core/mpi_handles.h"
#include "core/reduce_kernels.h"

namespace matexcomm {

void reduce_scatter_flat(const CollectiveContext& ctx, const void* send, void* recv, size_t recvcount,
                         matex_dtype_t dtype, matex_op_t op) {
  check_mpi(MPI_Reduce_scatter_block(send == nullptr ? MPI_IN_PLACE : send, recv, static_cast<int>(recvcount),
                                     MpiReductions::datatype(dtype), ctx.reductions->op(dtype, op), ctx.world),
            "MPI_Reduce_scatter_block");
  if (op == MATEX_AVG) divide_elements(dtype, recv, recvcount, ctx.layout->world_size);
}

}  // namespace matexcomm
