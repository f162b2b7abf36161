// entry_reductions.cc - MPI_Allreduce, MPI_Reduce, MPI_Reduce_scatter_block
// and MPI_Reduce_scatter (and their MPI-4 large-count forms): predefined
// datatypes and ops that map to libmatexcomm's, on intracommunicators.
#include <mpi.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <numeric>
#include <vector>

#include "call_report.h"
#include "intercomm.h"
#include "mpi_errors.h"
#include "mpi_types.h"
#include "route.h"

namespace matexinterpose {

namespace {

const void* matex_send(const void* sendbuf) { return sendbuf == MPI_IN_PLACE ? MATEX_IN_PLACE : sendbuf; }

// How a reduction's call may be served.
struct ReductionRoute {
  int coll = kOnlyMpiAlgorithm;  // for route_to_state
  bool inter_served = false;     // served between two groups (intercomm.h)
  bool bytes_limited = false;    // more than kMaxMovedBytes goes to MPI (reduce_scatter's int counts)
};

// The checks the four share; on kServed, *reduction and *state are set.
// recvbuf == MPI_IN_PLACE is an error MPI reports (recvbuf: nullptr where it
// is not significant).
template <class Count>
Reason route_reduction(MPI_Comm comm, const void* recvbuf, Count count, MPI_Datatype type, MPI_Op op,
                       const ReductionRoute& route, size_t elements, Reduction* reduction, CommState** state,
                       size_t* bytes) {
  Reason reason = route_before_arguments(comm);
  if (reason == Reason::kServed && (count < 0 || recvbuf == MPI_IN_PLACE)) reason = Reason::kInvalidArgument;
  if (reason == Reason::kServed) reason = map_reduction(type, op, reduction);
  *bytes = elements * reduction->element_bytes;
  if (reason == Reason::kServed) reason = route_to_state(comm, route.coll, *bytes, state, route.inter_served);
  if (reason == Reason::kServed && route.bytes_limited && *bytes > kMaxMovedBytes) reason = Reason::kTooLarge;
  return reason;
}

template <class Count, class Fallback>
int allreduce(Entry entry, const void* sendbuf, void* recvbuf, Count count, MPI_Datatype type, MPI_Op op,
              MPI_Comm comm, Fallback&& pmpi) {
  Reduction reduction;
  CommState* state = nullptr;
  size_t bytes = 0;
  Reason reason = route_reduction(comm, recvbuf, count, type, op, ReductionRoute{MATEX_COLL_ALLREDUCE, true, false},
                                  static_cast<size_t>(count), &reduction, &state, &bytes);
  // Between two groups MPI has no in place; the leaders' exchange takes int counts.
  if (reason == Reason::kServed && state->inter && sendbuf == MPI_IN_PLACE) reason = Reason::kInvalidArgument;
  if (reason == Reason::kServed && state->inter && count > INT_MAX) reason = Reason::kIntercomm;
  count_call(entry, reason, bytes);
  if (reason != Reason::kServed) return pmpi();
  if (state->inter) return inter_allreduce(*state, comm, sendbuf, recvbuf, static_cast<int>(count), type, reduction);
  return raise_on(comm, "MPI_Allreduce",
                  matex_allreduce(state->comm, matex_send(sendbuf), recvbuf,
                                  static_cast<size_t>(count) * reduction.count_factor, reduction.dtype, reduction.op));
}

template <class Count, class Fallback>
int reduce(Entry entry, const void* sendbuf, void* recvbuf, Count count, MPI_Datatype type, MPI_Op op, int root,
           MPI_Comm comm, Fallback&& pmpi) {
  Reduction reduction;
  CommState* state = nullptr;
  size_t bytes = 0;
  Reason reason = route_reduction(comm, nullptr, count, type, op, ReductionRoute{MATEX_COLL_REDUCE, false, false},
                                  static_cast<size_t>(count), &reduction, &state, &bytes);
  if (reason == Reason::kServed && (root < 0 || root >= state->size)) reason = Reason::kInvalidArgument;
  count_call(entry, reason, bytes);
  if (reason != Reason::kServed) return pmpi();
  return raise_on(comm, "MPI_Reduce",
                  matex_reduce(state->comm, matex_send(sendbuf), recvbuf,
                               static_cast<size_t>(count) * reduction.count_factor, reduction.dtype, reduction.op,
                               root));
}

// The per-rank input is size * recvcount elements (bytes as matex-bench counts them).
template <class Count, class Fallback>
int reduce_scatter_block(Entry entry, const void* sendbuf, void* recvbuf, Count recvcount, MPI_Datatype type,
                         MPI_Op op, MPI_Comm comm, Fallback&& pmpi) {
  Reduction reduction;
  CommState* state = nullptr;
  size_t bytes = 0;
  int size = 0;
  if (comm != MPI_COMM_NULL) PMPI_Comm_size(comm, &size);
  Reason reason = route_reduction(comm, recvbuf, recvcount, type, op, ReductionRoute{kOnlyMpiAlgorithm, false, true},
                                  static_cast<size_t>(recvcount) * static_cast<size_t>(size), &reduction, &state,
                                  &bytes);
  count_call(entry, reason, bytes);
  if (reason != Reason::kServed) return pmpi();
  return raise_on(comm, "MPI_Reduce_scatter_block",
                  matex_reduce_scatter(state->comm, matex_send(sendbuf), recvbuf,
                                       static_cast<size_t>(recvcount) * reduction.count_factor, reduction.dtype,
                                       reduction.op));
}

// Uneven blocks: an allreduce of the whole input into scratch memory, of
// which each rank keeps its block (libmatexcomm's reduce_scatter takes equal
// blocks only). In place, the input is the receive buffer, and only its first
// block may change: the rest stays as the caller left it, as MPI keeps it.
matex_status_t uneven_reduce_scatter(CommState& state, const void* sendbuf, void* recvbuf,
                                     const std::vector<size_t>& counts, const Reduction& reduction) {
  const size_t element = reduction.element_bytes;
  const size_t total = std::accumulate(counts.begin(), counts.end(), size_t{0});
  const size_t offset = std::accumulate(counts.begin(), counts.begin() + state.rank, size_t{0}) * element;
  const size_t mine = counts[state.rank] * element;
  state.scratch.resize(total * element);
  const void* input = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
  matex_status_t status = matex_allreduce(state.comm, input, state.scratch.data(), total * reduction.count_factor,
                                          reduction.dtype, reduction.op);
  if (status == MATEX_SUCCESS && mine > 0) std::memcpy(recvbuf, state.scratch.data() + offset, mine);
  return status;
}

template <class Count, class Fallback>
int reduce_scatter(Entry entry, const void* sendbuf, void* recvbuf, const Count* recvcounts, MPI_Datatype type,
                   MPI_Op op, MPI_Comm comm, Fallback&& pmpi) {
  Reduction reduction;
  CommState* state = nullptr;
  size_t bytes = 0;
  std::vector<size_t> counts;
  bool counts_valid = recvcounts != nullptr;
  if (counts_valid && comm != MPI_COMM_NULL) {
    int size = 0;
    PMPI_Comm_size(comm, &size);
    for (int r = 0; r < size; ++r) {
      counts_valid = counts_valid && recvcounts[r] >= 0;
      counts.push_back(static_cast<size_t>(recvcounts[r]));
    }
  }
  const size_t total = std::accumulate(counts.begin(), counts.end(), size_t{0});
  Reason reason = route_before_arguments(comm);
  if (reason == Reason::kServed && !counts_valid) reason = Reason::kInvalidArgument;
  if (reason == Reason::kServed) {
    reason = route_reduction(comm, recvbuf, Count{0}, type, op, ReductionRoute{kOnlyMpiAlgorithm, false, true}, total,
                             &reduction, &state, &bytes);
  }
  count_call(entry, reason, bytes);
  if (reason != Reason::kServed) return pmpi();
  const bool even = std::all_of(counts.begin(), counts.end(), [&](size_t c) { return c == counts[0]; });
  matex_status_t status =
      even ? matex_reduce_scatter(state->comm, matex_send(sendbuf), recvbuf, counts[0] * reduction.count_factor,
                                  reduction.dtype, reduction.op)
           : uneven_reduce_scatter(*state, sendbuf, recvbuf, counts, reduction);
  return raise_on(comm, "MPI_Reduce_scatter", status);
}

}  // namespace

}  // namespace matexinterpose

using namespace matexinterpose;

extern "C" {

int MPI_Allreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm) {
  return without_exceptions(comm, "MPI_Allreduce", [&] {
    return allreduce(Entry::kAllreduce, sendbuf, recvbuf, count, type, op, comm,
                   [&] { return PMPI_Allreduce(sendbuf, recvbuf, count, type, op, comm); });
  });
}

int MPI_Reduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op, int root,
               MPI_Comm comm) {
  return without_exceptions(comm, "MPI_Reduce", [&] {
    return reduce(Entry::kReduce, sendbuf, recvbuf, count, type, op, root, comm,
                [&] { return PMPI_Reduce(sendbuf, recvbuf, count, type, op, root, comm); });
  });
}

int MPI_Reduce_scatter_block(const void* sendbuf, void* recvbuf, int recvcount, MPI_Datatype type, MPI_Op op,
                             MPI_Comm comm) {
  return without_exceptions(comm, "MPI_Reduce_scatter_block", [&] {
    return reduce_scatter_block(Entry::kReduceScatterBlock, sendbuf, recvbuf, recvcount, type, op, comm,
                              [&] { return PMPI_Reduce_scatter_block(sendbuf, recvbuf, recvcount, type, op, comm); });
  });
}

int MPI_Reduce_scatter(const void* sendbuf, void* recvbuf, const int recvcounts[], MPI_Datatype type, MPI_Op op,
                       MPI_Comm comm) {
  return without_exceptions(comm, "MPI_Reduce_scatter", [&] {
    return reduce_scatter(Entry::kReduceScatter, sendbuf, recvbuf, recvcounts, type, op, comm,
                        [&] { return PMPI_Reduce_scatter(sendbuf, recvbuf, recvcounts, type, op, comm); });
  });
}

#if MPI_VERSION >= 4
int MPI_Allreduce_c(const void* sendbuf, void* recvbuf, MPI_Count count, MPI_Datatype type, MPI_Op op,
                    MPI_Comm comm) {
  return without_exceptions(comm, "MPI_Allreduce_c", [&] {
    return allreduce(Entry::kLargeCount, sendbuf, recvbuf, count, type, op, comm,
                   [&] { return PMPI_Allreduce_c(sendbuf, recvbuf, count, type, op, comm); });
  });
}

int MPI_Reduce_c(const void* sendbuf, void* recvbuf, MPI_Count count, MPI_Datatype type, MPI_Op op, int root,
                 MPI_Comm comm) {
  return without_exceptions(comm, "MPI_Reduce_c", [&] {
    return reduce(Entry::kLargeCount, sendbuf, recvbuf, count, type, op, root, comm,
                [&] { return PMPI_Reduce_c(sendbuf, recvbuf, count, type, op, root, comm); });
  });
}

int MPI_Reduce_scatter_block_c(const void* sendbuf, void* recvbuf, MPI_Count recvcount, MPI_Datatype type,
                               MPI_Op op, MPI_Comm comm) {
  return without_exceptions(comm, "MPI_Reduce_scatter_block_c", [&] {
    return reduce_scatter_block(Entry::kLargeCount, sendbuf, recvbuf, recvcount, type, op, comm, [&] {
    return PMPI_Reduce_scatter_block_c(sendbuf, recvbuf, recvcount, type, op, comm);
  });
  });
}

int MPI_Reduce_scatter_c(const void* sendbuf, void* recvbuf, const MPI_Count recvcounts[], MPI_Datatype type,
                         MPI_Op op, MPI_Comm comm) {
  return without_exceptions(comm, "MPI_Reduce_scatter_c", [&] {
    return reduce_scatter(Entry::kLargeCount, sendbuf, recvbuf, recvcounts, type, op, comm,
                        [&] { return PMPI_Reduce_scatter_c(sendbuf, recvbuf, recvcounts, type, op, comm); });
  });
}
#endif

}  // extern "C"
