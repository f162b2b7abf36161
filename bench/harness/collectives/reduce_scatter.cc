// reduce_scatter.cc - matex-bench's reduce_scatter: every rank's n x p
// elements reduced, rank r keeping block r of n. busbw factor (p-1)/p.
#include "collective_descriptor.h"

namespace matexbench {
namespace {

CallExtent extent(const CaseSpec& spec, int world_size) {
  const size_t n = spec.count * matex_dtype_size(spec.dtype);
  const size_t np = n * static_cast<size_t>(world_size);
  return {spec.in_place ? 0 : np, spec.in_place ? np : n, n};
}

void prepare(const RankCall& call, const ReferencePatterns& patterns, uint64_t seq, bool poison) {
  prepare_reduction(call, patterns, seq, poison, call.spec.count * static_cast<size_t>(call.world_size));
}

ByteSpan input_in_recv(const CaseSpec& spec, int, int world_size) {
  return {0, spec.count * matex_dtype_size(spec.dtype) * static_cast<size_t>(world_size)};
}

void run_ours(matex::Communicator& comm, const CaseSpec& spec, const void* send, void* recv) {
  comm.reduce_scatter(send, recv, spec.count, spec.dtype, spec.op);
}

void run_mpi(const MpiBaseline& mpi, const CaseSpec& spec, const void* send, void* recv) {
  MPI_Reduce_scatter_block(send != nullptr ? send : MPI_IN_PLACE, recv, MpiBaseline::int_count(spec.count),
                           mpi_datatype(spec.dtype), mpi.reduction(spec.dtype, spec.op), MPI_COMM_WORLD);
  mpi.finish(spec, recv);
}

uint64_t count_wrong(const RankCall& call, const ReferencePatterns& patterns, uint64_t seq) {
  return patterns.count_wrong_reduced(seq, static_cast<size_t>(call.rank) * call.spec.count, call.spec.count,
                                      call.recv);
}

}  // namespace

extern const CollectiveDescriptor kReduceScatterDescriptor = {
    MATEX_COLL_REDUCE_SCATTER, "reduce_scatter", true, false, true, false,
    [](int p) { return (p - 1.0) / p; }, extent, prepare, false, input_in_recv,
    [](const CaseSpec&, int) { return true; }, run_ours, run_mpi, count_wrong};

}  // namespace matexbench
