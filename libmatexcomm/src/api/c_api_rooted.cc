// c_api_rooted.cc - the extern "C" entry points of the premultiplied sums, the
// rooted collectives and all-to-all. Each runs inside guarded(); the checks
// and algorithms live in the communicator (comm/communicator_rooted.cc,
// comm/communicator_premul.cc).
#include "api/c_api_support.h"
#include "comm/communicator.h"
#include "matexcomm/matexcomm.h"

using matexcomm::capi::guarded;
using matexcomm::capi::live_comm;

extern "C" {

matex_status_t matex_allreduce_premul_sum(matex_comm_t comm, const void* sendbuf, void* recvbuf, size_t count,
                                          matex_dtype_t dtype, double factor) {
  return guarded([&] { live_comm(comm).allreduce_premul_sum(sendbuf, recvbuf, count, dtype, factor); });
}

matex_status_t matex_reduce_scatter_premul_sum(matex_comm_t comm, const void* sendbuf, void* recvbuf,
                                               size_t recvcount, matex_dtype_t dtype, double factor) {
  return guarded([&] { live_comm(comm).reduce_scatter_premul_sum(sendbuf, recvbuf, recvcount, dtype, factor); });
}

matex_status_t matex_reduce(matex_comm_t comm, const void* sendbuf, void* recvbuf, size_t count, matex_dtype_t dtype,
                            matex_op_t op, int root) {
  return guarded([&] { live_comm(comm).reduce(sendbuf, recvbuf, count, dtype, op, root); });
}

matex_status_t matex_gather(matex_comm_t comm, const void* sendbuf, void* recvbuf, size_t count, matex_dtype_t dtype,
                            int root) {
  return guarded([&] { live_comm(comm).gather(sendbuf, recvbuf, count, dtype, root); });
}

matex_status_t matex_gatherv(matex_comm_t comm, const void* sendbuf, size_t sendcount, void* recvbuf,
                             const size_t* recvcounts, const size_t* displs, matex_dtype_t dtype, int root) {
  return guarded([&] { live_comm(comm).gatherv(sendbuf, sendcount, recvbuf, recvcounts, displs, dtype, root); });
}

matex_status_t matex_scatter(matex_comm_t comm, const void* sendbuf, void* recvbuf, size_t count,
                             matex_dtype_t dtype, int root) {
  return guarded([&] { live_comm(comm).scatter(sendbuf, recvbuf, count, dtype, root); });
}

matex_status_t matex_scatterv(matex_comm_t comm, const void* sendbuf, const size_t* sendcounts, const size_t* displs,
                              void* recvbuf, size_t recvcount, matex_dtype_t dtype, int root) {
  return guarded([&] { live_comm(comm).scatterv(sendbuf, sendcounts, displs, recvbuf, recvcount, dtype, root); });
}

matex_status_t matex_alltoall(matex_comm_t comm, const void* sendbuf, void* recvbuf, size_t count,
                              matex_dtype_t dtype) {
  return guarded([&] { live_comm(comm).alltoall(sendbuf, recvbuf, count, dtype); });
}

matex_status_t matex_alltoallv(matex_comm_t comm, const void* sendbuf, const size_t* sendcounts,
                               const size_t* sdispls, void* recvbuf, const size_t* recvcounts, const size_t* rdispls,
                               matex_dtype_t dtype) {
  return guarded(
      [&] { live_comm(comm).alltoallv(sendbuf, sendcounts, sdispls, recvbuf, recvcounts, rdispls, dtype); });
}

matex_status_t matex_comm_create_from_ranks(matex_comm_t parent, const int* ranks, int n, matex_comm_t* comm) {
  return guarded([&] {
    matexcomm::capi::require_out(comm, "comm");
    *comm = nullptr;
    matexcomm::Communicator& owner = live_comm(parent);
    MATEX_REQUIRE(ranks != nullptr, MATEX_ERR_INVALID_ARG, "ranks is NULL");
    MATEX_REQUIRE(n >= 1, MATEX_ERR_INVALID_ARG, "n = " + std::to_string(n) + " must be at least 1");
    *comm = matexcomm::capi::register_communicator(owner.create_from_ranks(std::vector<int>(ranks, ranks + n)));
  });
}

}  // extern "C"
