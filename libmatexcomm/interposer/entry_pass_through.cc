// entry_pass_through.cc - the entry points that MPI runs itself, counted for
// the report:
// - MPI_Barrier: libmatexcomm's barrier is MPI's (MATEX_INTERPOSE=all serves
//   it, to test the route).
// - The nonblocking forms: MPI's own, so that they progress while the caller
//   computes and complete in any order with other requests. A blocking
//   libmatexcomm call in their place could deadlock a correct program.
// - MPI-4's persistent (_init) and nonblocking large-count forms.
// And MPI_Init / MPI_Init_thread, which register the MPI_Finalize hook on
// every rank.
#include <mpi.h>

#include "call_report.h"
#include "comm_state.h"
#include "mpi_errors.h"
#include "route.h"

using namespace matexinterpose;

namespace {

template <class Fallback>
int pass(Entry entry, Fallback&& pmpi) {
  const bool late = finalizing();
  if (!late) install_finalize_hook(false);  // a no-op once installed
  count_call(entry, late ? Reason::kAfterFinalize : Reason::kNonblocking, 0);
  return pmpi();
}

template <class Fallback>
int pass_mpi4(Fallback&& pmpi) {
  count_call(Entry::kPersistent, finalizing() ? Reason::kAfterFinalize : Reason::kMpi4Form, 0);
  return pmpi();
}

}  // namespace

extern "C" {

int MPI_Init(int* argc, char*** argv) {
  const int rc = PMPI_Init(argc, argv);
  if (rc == MPI_SUCCESS) install_finalize_hook(true);
  return rc;
}

int MPI_Init_thread(int* argc, char*** argv, int required, int* provided) {
  const int rc = PMPI_Init_thread(argc, argv, required, provided);
  if (rc == MPI_SUCCESS) install_finalize_hook(true);
  return rc;
}

int MPI_Barrier(MPI_Comm comm) {
  return without_exceptions(comm, "MPI_Barrier", [&] {
    Reason reason = route_before_arguments(comm);
    CommState* state = nullptr;
    if (reason == Reason::kServed) reason = route_to_state(comm, kOnlyMpiAlgorithm, 0, &state);
    count_call(Entry::kBarrier, reason, 0);
    if (reason != Reason::kServed) return PMPI_Barrier(comm);
    return raise_on(comm, "MPI_Barrier", matex_barrier(state->comm));
  });
}

int MPI_Iallreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm,
                   MPI_Request* request) {
  return pass(Entry::kIallreduce, [&] { return PMPI_Iallreduce(sendbuf, recvbuf, count, type, op, comm, request); });
}

int MPI_Ireduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op, int root,
                MPI_Comm comm, MPI_Request* request) {
  return pass(Entry::kIreduce,
              [&] { return PMPI_Ireduce(sendbuf, recvbuf, count, type, op, root, comm, request); });
}

int MPI_Ibcast(void* buffer, int count, MPI_Datatype type, int root, MPI_Comm comm, MPI_Request* request) {
  return pass(Entry::kIbcast, [&] { return PMPI_Ibcast(buffer, count, type, root, comm, request); });
}

int MPI_Iallgather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
                   MPI_Datatype recvtype, MPI_Comm comm, MPI_Request* request) {
  return pass(Entry::kIallgather, [&] {
    return PMPI_Iallgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, request);
  });
}

int MPI_Iallgatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, const int recvcounts[],
                    const int displs[], MPI_Datatype recvtype, MPI_Comm comm, MPI_Request* request) {
  return pass(Entry::kIallgatherv, [&] {
    return PMPI_Iallgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm, request);
  });
}

int MPI_Ireduce_scatter_block(const void* sendbuf, void* recvbuf, int recvcount, MPI_Datatype type, MPI_Op op,
                              MPI_Comm comm, MPI_Request* request) {
  return pass(Entry::kIreduceScatterBlock, [&] {
    return PMPI_Ireduce_scatter_block(sendbuf, recvbuf, recvcount, type, op, comm, request);
  });
}

int MPI_Ireduce_scatter(const void* sendbuf, void* recvbuf, const int recvcounts[], MPI_Datatype type, MPI_Op op,
                        MPI_Comm comm, MPI_Request* request) {
  return pass(Entry::kIreduceScatter,
              [&] { return PMPI_Ireduce_scatter(sendbuf, recvbuf, recvcounts, type, op, comm, request); });
}

int MPI_Ibarrier(MPI_Comm comm, MPI_Request* request) {
  return pass(Entry::kIbarrier, [&] { return PMPI_Ibarrier(comm, request); });
}

#if MPI_VERSION >= 4
int MPI_Allreduce_init(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm,
                       MPI_Info info, MPI_Request* request) {
  return pass_mpi4([&] { return PMPI_Allreduce_init(sendbuf, recvbuf, count, type, op, comm, info, request); });
}

int MPI_Reduce_init(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op, int root,
                    MPI_Comm comm, MPI_Info info, MPI_Request* request) {
  return pass_mpi4(
      [&] { return PMPI_Reduce_init(sendbuf, recvbuf, count, type, op, root, comm, info, request); });
}

int MPI_Bcast_init(void* buffer, int count, MPI_Datatype type, int root, MPI_Comm comm, MPI_Info info,
                   MPI_Request* request) {
  return pass_mpi4([&] { return PMPI_Bcast_init(buffer, count, type, root, comm, info, request); });
}

int MPI_Allgather_init(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
                       MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info, MPI_Request* request) {
  return pass_mpi4([&] {
    return PMPI_Allgather_init(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, info, request);
  });
}

int MPI_Allgatherv_init(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                        const int recvcounts[], const int displs[], MPI_Datatype recvtype, MPI_Comm comm,
                        MPI_Info info, MPI_Request* request) {
  return pass_mpi4([&] {
    return PMPI_Allgatherv_init(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm, info,
                                request);
  });
}

int MPI_Reduce_scatter_block_init(const void* sendbuf, void* recvbuf, int recvcount, MPI_Datatype type, MPI_Op op,
                                  MPI_Comm comm, MPI_Info info, MPI_Request* request) {
  return pass_mpi4([&] {
    return PMPI_Reduce_scatter_block_init(sendbuf, recvbuf, recvcount, type, op, comm, info, request);
  });
}

int MPI_Reduce_scatter_init(const void* sendbuf, void* recvbuf, const int recvcounts[], MPI_Datatype type, MPI_Op op,
                            MPI_Comm comm, MPI_Info info, MPI_Request* request) {
  return pass_mpi4(
      [&] { return PMPI_Reduce_scatter_init(sendbuf, recvbuf, recvcounts, type, op, comm, info, request); });
}

int MPI_Barrier_init(MPI_Comm comm, MPI_Info info, MPI_Request* request) {
  return pass_mpi4([&] { return PMPI_Barrier_init(comm, info, request); });
}

int MPI_Iallreduce_c(const void* sendbuf, void* recvbuf, MPI_Count count, MPI_Datatype type, MPI_Op op,
                     MPI_Comm comm, MPI_Request* request) {
  return pass_mpi4([&] { return PMPI_Iallreduce_c(sendbuf, recvbuf, count, type, op, comm, request); });
}

int MPI_Ibcast_c(void* buffer, MPI_Count count, MPI_Datatype type, int root, MPI_Comm comm, MPI_Request* request) {
  return pass_mpi4([&] { return PMPI_Ibcast_c(buffer, count, type, root, comm, request); });
}

int MPI_Iallgather_c(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void* recvbuf,
                     MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Request* request) {
  return pass_mpi4([&] {
    return PMPI_Iallgather_c(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, request);
  });
}
#endif

}  // extern "C"
