// fake_nccl.cc - the NCCL calls libmatexcomm makes, carried out with MPI on
// the CPU (see fake_cuda_runtime.cc for why). A communicator is an MPI
// communicator split off MPI_COMM_WORLD by the unique id, which the fake
// ncclGetUniqueId fills with the creating rank and a counter; ncclCommInitRank
// is therefore collective over the world, as libmatexcomm calls it (every rank
// sets up its node's communicator in the same call). Calls inside a group run
// one after the other: every rank issues the same sequence, so they match.
#include <mpi.h>
#include <nccl.h>

#include <cstring>
#include <memory>
#include <vector>

#include "core/dtype.h"
#include "transport/mpi_reductions.h"

struct ncclComm {
  MPI_Comm mpi = MPI_COMM_NULL;
  int rank = 0;
};

namespace {

const matexcomm::MpiReductions& reductions() {
  static const auto instance = std::make_unique<matexcomm::MpiReductions>();
  return *instance;
}

matex_dtype_t to_matex_dtype(ncclDataType_t type) {
  switch (type) {
    case ncclInt8: return MATEX_INT8;
    case ncclUint8: return MATEX_UINT8;
    case ncclInt32: return MATEX_INT32;
    case ncclUint32: return MATEX_UINT32;
    case ncclInt64: return MATEX_INT64;
    case ncclUint64: return MATEX_UINT64;
    case ncclFloat16: return MATEX_FLOAT16;
    case ncclBfloat16: return MATEX_BFLOAT16;
    case ncclFloat32: return MATEX_FLOAT32;
    case ncclFloat64: return MATEX_FLOAT64;
    default: return MATEX_DTYPE_COUNT;
  }
}

matex_op_t to_matex_op(ncclRedOp_t op) {
  switch (op) {
    case ncclSum: return MATEX_SUM;
    case ncclProd: return MATEX_PROD;
    case ncclMin: return MATEX_MIN;
    case ncclMax: return MATEX_MAX;
    default: return MATEX_OP_COUNT;
  }
}

ncclResult_t status(int rc) { return rc == MPI_SUCCESS ? ncclSuccess : ncclSystemError; }

size_t bytes_of(size_t count, ncclDataType_t type) { return count * matexcomm::dtype_size(to_matex_dtype(type)); }

}  // namespace

ncclResult_t ncclGetUniqueId(ncclUniqueId* id) {
  static int created = 0;
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  std::memset(id, 0, sizeof *id);
  const int color = rank * 1000 + created++;
  std::memcpy(id->internal, &color, sizeof color);
  return ncclSuccess;
}

ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank) {
  int color = 0;
  std::memcpy(&color, id.internal, sizeof color);
  auto made = std::make_unique<ncclComm>();
  if (MPI_Comm_split(MPI_COMM_WORLD, color, rank, &made->mpi) != MPI_SUCCESS) return ncclSystemError;
  int size = 0;
  MPI_Comm_size(made->mpi, &size);
  if (size != nranks) return ncclInvalidArgument;
  made->rank = rank;
  *comm = made.release();
  return ncclSuccess;
}

ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  if (comm == nullptr) return ncclSuccess;
  MPI_Comm_free(&comm->mpi);
  delete comm;
  return ncclSuccess;
}
ncclResult_t ncclCommAbort(ncclComm_t comm) { return ncclCommDestroy(comm); }

const char* ncclGetErrorString(ncclResult_t) { return "fake NCCL error"; }
ncclResult_t ncclGroupStart() { return ncclSuccess; }
ncclResult_t ncclGroupEnd() { return ncclSuccess; }

ncclResult_t ncclAllReduce(const void* send, void* recv, size_t count, ncclDataType_t type, ncclRedOp_t op,
                           ncclComm_t comm, cudaStream_t) {
  if (send == recv) send = nullptr;
  reductions().allreduce(comm->mpi, send, recv, count, to_matex_dtype(type), to_matex_op(op));
  return ncclSuccess;
}

ncclResult_t ncclReduceScatter(const void* send, void* recv, size_t recvcount, ncclDataType_t type, ncclRedOp_t op,
                               ncclComm_t comm, cudaStream_t) {
  int size = 0;
  MPI_Comm_size(comm->mpi, &size);
  const matex_dtype_t dtype = to_matex_dtype(type);
  // In place (recv inside send) is NCCL's convention: reduce a copy of the input.
  std::vector<char> whole(static_cast<const char*>(send), static_cast<const char*>(send) + bytes_of(recvcount, type) * size);
  return status(MPI_Reduce_scatter_block(whole.data(), recv, static_cast<int>(recvcount),
                                         matexcomm::MpiReductions::datatype(dtype), reductions().op(dtype, to_matex_op(op)),
                                         comm->mpi));
}

ncclResult_t ncclAllGather(const void* send, void* recv, size_t sendcount, ncclDataType_t type, ncclComm_t comm,
                           cudaStream_t) {
  const size_t bytes = bytes_of(sendcount, type);
  std::vector<char> mine(static_cast<const char*>(send), static_cast<const char*>(send) + bytes);
  return status(MPI_Allgather(mine.data(), static_cast<int>(bytes), MPI_BYTE, recv, static_cast<int>(bytes), MPI_BYTE,
                              comm->mpi));
}

ncclResult_t ncclBroadcast(const void* send, void* recv, size_t count, ncclDataType_t type, int root, ncclComm_t comm,
                           cudaStream_t) {
  const size_t bytes = bytes_of(count, type);
  if (comm->rank == root && send != recv) std::memmove(recv, send, bytes);
  return status(MPI_Bcast(recv, static_cast<int>(bytes), MPI_BYTE, root, comm->mpi));
}

ncclResult_t ncclReduce(const void* send, void* recv, size_t count, ncclDataType_t type, ncclRedOp_t op, int root,
                        ncclComm_t comm, cudaStream_t) {
  const matex_dtype_t dtype = to_matex_dtype(type);
  const void* input = comm->rank == root && send == recv ? MPI_IN_PLACE : send;
  return status(MPI_Reduce(input, recv, static_cast<int>(count), matexcomm::MpiReductions::datatype(dtype),
                           reductions().op(dtype, to_matex_op(op)), root, comm->mpi));
}
