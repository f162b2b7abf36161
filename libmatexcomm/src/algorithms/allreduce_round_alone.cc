// allreduce_round_alone.cc - one pipeline round of a hierarchical allreduce on a
// node that has a single rank (see collective_context.h).
//
// Cost: n/B_mem for the copy (none in place) + the MPI allreduce across nodes.
#include <cstring>

#include "algorithms/collective_context.h"
#include "core/dtype.h"
#include "core/reduce_kernels.h"

namespace matexcomm {

void allreduce_round_alone(const CollectiveContext& ctx, MPI_Comm across, const AllreduceArgs& args, size_t offset,
                           size_t count) {
  const size_t element = dtype_size(args.dtype);
  const char* in = static_cast<const char*>(args.send) + offset * element;
  char* out = static_cast<char*>(args.recv) + offset * element;
  if (in != out) std::memcpy(out, in, count * element);
  if (ctx.layout->node_count > 1) ctx.reductions->allreduce_in_place(across, out, count, args.dtype, args.op);
  if (args.op == MATEX_AVG) divide_elements(args.dtype, out, count, ctx.layout->world_size);
}

}  // namespace matexcomm
