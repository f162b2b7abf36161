// allreduce.cc - matex-bench's allreduce: every rank's n elements reduced into
// every rank's recv. busbw factor 2(p-1)/p (nccl-tests').
#include "collective_descriptor.h"

namespace matexbench {
namespace {

CallExtent extent(const CaseSpec& spec, int) {
  const size_t n = spec.count * matex_dtype_size(spec.dtype);
  return {spec.in_place ? 0 : n, n, n};
}

void prepare(const RankCall& call, const ReferencePatterns& patterns, uint64_t seq, bool poison) {
  prepare_reduction(call, patterns, seq, poison, call.spec.count);
}

ByteSpan input_in_recv(const CaseSpec& spec, int, int) { return {0, spec.count * matex_dtype_size(spec.dtype)}; }

void run_ours(matex::Communicator& comm, const CaseSpec& spec, const void* send, void* recv) {
  comm.allreduce(send, recv, spec.count, spec.dtype, spec.op);
}

void run_mpi(const MpiBaseline& mpi, const CaseSpec& spec, const void* send, void* recv) {
  MPI_Allreduce(send != nullptr ? send : MPI_IN_PLACE, recv, MpiBaseline::int_count(spec.count),
                mpi_datatype(spec.dtype), mpi.reduction(spec.dtype, spec.op), MPI_COMM_WORLD);
  mpi.finish(spec, recv);
}

uint64_t count_wrong(const RankCall& call, const ReferencePatterns& patterns, uint64_t seq) {
  return patterns.count_wrong_reduced(seq, 0, call.spec.count, call.recv);
}

}  // namespace

extern const CollectiveDescriptor kAllreduceDescriptor = {
    MATEX_COLL_ALLREDUCE, "allreduce", true, false, false, false,
    [](int p) { return 2.0 * (p - 1) / p; }, extent, prepare, false, input_in_recv,
    [](const CaseSpec&, int) { return true; }, run_ours, run_mpi, count_wrong};

}  // namespace matexbench
