// broadcast.cc - matex-bench's broadcast: the root's n elements into every
// rank's buffer. One buffer, so every call is in place. busbw factor 1.
#include "collective_descriptor.h"

#include <cstring>

namespace matexbench {
namespace {

CallExtent extent(const CaseSpec& spec, int) {
  const size_t n = spec.count * matex_dtype_size(spec.dtype);
  return {0, n, n};
}

void prepare(const RankCall& call, const ReferencePatterns& patterns, uint64_t seq, bool) {
  if (call.rank == call.spec.root) patterns.fill_input(call.rank, seq, 0, call.spec.count, call.recv);
  else std::memset(call.recv, kPoison, call.spec.count * matex_dtype_size(call.spec.dtype));
}

ByteSpan input_in_recv(const CaseSpec& spec, int rank, int) {
  return {0, rank == spec.root ? spec.count * matex_dtype_size(spec.dtype) : 0};
}

bool writes_output(const CaseSpec& spec, int rank) { return rank != spec.root; }

void run_ours(matex::Communicator& comm, const CaseSpec& spec, const void*, void* recv) {
  comm.broadcast(recv, spec.count, spec.dtype, spec.root);
}

void run_mpi(const MpiBaseline&, const CaseSpec& spec, const void*, void* recv) {
  MPI_Bcast(recv, MpiBaseline::int_count(spec.count), mpi_datatype(spec.dtype), spec.root, MPI_COMM_WORLD);
}

uint64_t count_wrong(const RankCall& call, const ReferencePatterns& patterns, uint64_t seq) {
  return patterns.count_wrong_input(call.spec.root, seq, 0, call.spec.count, call.recv);
}

}  // namespace

extern const CollectiveDescriptor kBroadcastDescriptor = {
    MATEX_COLL_BROADCAST, "broadcast", false, true, false, true,
    [](int) { return 1.0; }, extent, prepare, true, input_in_recv, writes_output, run_ours, run_mpi, count_wrong};

}  // namespace matexbench
