// allreduce_round_alone.cc - one pipeline round of a hierarchical allreduce on a
// node that has a single rank (see collective_context.h).
//
// Cost: n/B_mem for the copy (none in place) + the MPI allreduce across nodes.
// A round that spans several pieces of a fused allreduce goes through the
// communicator's scratch memory (one more copy each way), since MPI needs one
// contiguous buffer.
#include <cstring>

#include "algorithms/buffer_pieces.h"
#include "algorithms/collective_context.h"
#include "core/dtype.h"
#include "core/reduce_kernels.h"

namespace matexcomm {

namespace {

void reduce_across(const CollectiveContext& ctx, MPI_Comm across, const AllreduceArgs& args, char* data, size_t count) {
  if (ctx.layout->node_count > 1) ctx.reductions->allreduce_in_place(across, data, count, args.dtype, args.op);
  if (args.op == MATEX_AVG) divide_elements(args.dtype, data, count, ctx.layout->world_size);
}

}  // namespace

void allreduce_round_alone(const CollectiveContext& ctx, MPI_Comm across, const AllreduceArgs& args,
                           const PieceWalker& buffers, size_t offset, size_t count) {
  const size_t element = dtype_size(args.dtype);
  int parts = 0;
  char* only_recv = nullptr;
  buffers.for_each(offset, count, [&](const char*, char* recv, size_t, size_t) {
    ++parts;
    only_recv = recv;
  });
  if (parts == 1) {
    buffers.for_each(offset, count, [&](const char* send, char* recv, size_t, size_t n) {
      if (send != recv) std::memcpy(recv, send, n * element);
    });
    reduce_across(ctx, across, args, only_recv, count);
    return;
  }
  char* staged = scratch_memory(ctx, count * element);
  buffers.for_each(offset, count, [&](const char* send, char*, size_t at, size_t n) {
    std::memcpy(staged + at * element, send, n * element);
  });
  reduce_across(ctx, across, args, staged, count);
  buffers.for_each(offset, count, [&](const char*, char* recv, size_t at, size_t n) {
    std::memcpy(recv, staged + at * element, n * element);
  });
}

void allreduce_round_alone(const CollectiveContext& ctx, MPI_Comm across, const AllreduceArgs& args, size_t offset,
                           size_t count) {
  const PieceWalker whole(args.send, args.recv, args.count, dtype_size(args.dtype));
  allreduce_round_alone(ctx, across, args, whole, offset, count);
}

}  // namespace matexcomm
