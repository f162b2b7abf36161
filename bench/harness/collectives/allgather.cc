// allgather.cc - matex-bench's allgather: every rank's n elements into block
// r of every rank's n x p. busbw factor (p-1)/p.
#include "collective_descriptor.h"

#include <cstring>

namespace matexbench {
namespace {

CallExtent extent(const CaseSpec& spec, int world_size) {
  const size_t n = spec.count * matex_dtype_size(spec.dtype);
  const size_t np = n * static_cast<size_t>(world_size);
  return {spec.in_place ? 0 : n, np, np};
}

void prepare(const RankCall& call, const ReferencePatterns& patterns, uint64_t seq, bool poison) {
  const size_t block = call.spec.count * matex_dtype_size(call.spec.dtype);
  const size_t all = block * static_cast<size_t>(call.world_size);
  if (call.spec.in_place) {
    std::memset(call.recv, kPoison, all);
    patterns.fill_input(call.rank, seq, 0, call.spec.count, call.recv + static_cast<size_t>(call.rank) * block);
    return;
  }
  patterns.fill_input(call.rank, seq, 0, call.spec.count, call.send);
  if (poison) std::memset(call.recv, kPoison, all);
}

ByteSpan input_in_recv(const CaseSpec& spec, int rank, int) {  // this rank's block
  const size_t block = spec.count * matex_dtype_size(spec.dtype);
  return {static_cast<size_t>(rank) * block, block};
}

void run_ours(matex::Communicator& comm, const CaseSpec& spec, const void* send, void* recv) {
  comm.allgather(send, recv, spec.count, spec.dtype);
}

void run_mpi(const MpiBaseline&, const CaseSpec& spec, const void* send, void* recv) {
  const int n = MpiBaseline::int_count(spec.count);
  const MPI_Datatype type = mpi_datatype(spec.dtype);
  if (send != nullptr) MPI_Allgather(send, n, type, recv, n, type, MPI_COMM_WORLD);
  else MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, recv, n, type, MPI_COMM_WORLD);
}

uint64_t count_wrong(const RankCall& call, const ReferencePatterns& patterns, uint64_t seq) {
  const size_t block = call.spec.count * matex_dtype_size(call.spec.dtype);
  uint64_t wrong = 0;
  for (int source = 0; source < call.world_size; ++source) {
    wrong += patterns.count_wrong_input(source, seq, 0, call.spec.count, call.recv + source * block);
  }
  return wrong;
}

}  // namespace

extern const CollectiveDescriptor kAllgatherDescriptor = {
    MATEX_COLL_ALLGATHER, "allgather", false, false, true, false,
    [](int p) { return (p - 1.0) / p; }, extent, prepare, false, input_in_recv,
    [](const CaseSpec&, int) { return true; }, run_ours, run_mpi, count_wrong};

}  // namespace matexbench
