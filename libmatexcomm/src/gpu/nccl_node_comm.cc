#include "gpu/nccl_node_comm.h"

#include <cstdio>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/mpi_handles.h"

namespace matexcomm::gpu {

void check_nccl(ncclResult_t rc, const char* what) {
  if (rc == ncclSuccess) return;
  MATEX_RAISE(MATEX_ERR_DEVICE, std::string(what) + " failed: " + ncclGetErrorString(rc));
}

ncclDataType_t nccl_datatype(matex_dtype_t dtype) {
  switch (dtype) {
    case MATEX_INT8: return ncclInt8;
    case MATEX_UINT8: return ncclUint8;
    case MATEX_INT32: return ncclInt32;
    case MATEX_INT64: return ncclInt64;
    case MATEX_FLOAT16: return ncclFloat16;
    case MATEX_BFLOAT16: return ncclBfloat16;
    case MATEX_FLOAT32: return ncclFloat32;
    case MATEX_FLOAT64: return ncclFloat64;
    default: break;
  }
  MATEX_RAISE(MATEX_ERR_INVALID_ARG, "dtype " + std::to_string(static_cast<int>(dtype)) + " has no NCCL type");
}

ncclRedOp_t nccl_op(matex_op_t op) {
  switch (op) {
    case MATEX_SUM:
    case MATEX_AVG: return ncclSum;
    case MATEX_PROD: return ncclProd;
    case MATEX_MIN: return ncclMin;
    case MATEX_MAX: return ncclMax;
    default: break;
  }
  MATEX_RAISE(MATEX_ERR_INVALID_ARG, "op " + std::to_string(static_cast<int>(op)) + " has no NCCL reduction");
}

namespace {

constexpr int kBusIdBytes = 32;

// The node's ranks' GPUs by PCI bus id: NCCL refuses two ranks on one GPU, and
// finding that out here lets every rank of the node say so alike, before any
// rank enters ncclCommInitRank.
void require_distinct_gpus(MPI_Comm node, int local_size) {
  int device = 0;
  char mine[kBusIdBytes] = {};
  std::string problem;
  if (cudaGetDevice(&device) != cudaSuccess || cudaDeviceGetPCIBusId(mine, kBusIdBytes, device) != cudaSuccess) {
    (void)cudaGetLastError();
    std::snprintf(mine, sizeof mine, "unknown");
  }
  std::vector<char> all(static_cast<size_t>(kBusIdBytes) * local_size);
  check_mpi(MPI_Allgather(mine, kBusIdBytes, MPI_CHAR, all.data(), kBusIdBytes, MPI_CHAR, node),
            "MPI_Allgather of the node's GPU bus ids");
  for (int a = 0; a < local_size; ++a) {
    const std::string first(&all[a * kBusIdBytes]);
    if (first == "unknown") problem = "local rank " + std::to_string(a) + " cannot tell its GPU's bus id";
    for (int b = a + 1; b < local_size && problem.empty(); ++b) {
      if (first == std::string(&all[b * kBusIdBytes])) {
        problem = "local ranks " + std::to_string(a) + " and " + std::to_string(b) + " of this node share the GPU at " +
                  first + ", and NCCL needs one GPU per rank";
      }
    }
    if (!problem.empty()) MATEX_RAISE(MATEX_ERR_DEVICE, problem);
  }
}

}  // namespace

NcclNodeComm::NcclNodeComm(MPI_Comm node, int local_rank, int local_size) : rank_(local_rank), size_(local_size) {
  require_distinct_gpus(node, local_size);
  // The id travels with local rank 0's status, so a failure there stops every rank of the node.
  struct {
    int ok;
    ncclUniqueId id;
  } shared{};
  std::string root_problem;
  if (local_rank == 0) {
    ncclResult_t rc = ncclGetUniqueId(&shared.id);
    shared.ok = rc == ncclSuccess ? 1 : 0;
    if (rc != ncclSuccess) root_problem = ncclGetErrorString(rc);
  }
  check_mpi(MPI_Bcast(&shared, sizeof shared, MPI_BYTE, 0, node), "MPI_Bcast of the NCCL unique id");
  if (!shared.ok) {
    MATEX_RAISE(MATEX_ERR_DEVICE, "ncclGetUniqueId failed on local rank 0" +
                                      (root_problem.empty() ? std::string() : ": " + root_problem));
  }
  const ncclUniqueId& id = shared.id;
  ncclComm_t comm = nullptr;
  ncclResult_t rc = ncclCommInitRank(&comm, local_size, id, local_rank);
  if (rc != ncclSuccess) {
    if (comm != nullptr) (void)ncclCommAbort(comm);
    check_nccl(rc, "ncclCommInitRank of the node's NCCL communicator");
  }
  comm_ = comm;
}

NcclNodeComm::~NcclNodeComm() {
  if (comm_ != nullptr) (void)ncclCommDestroy(comm_);
}

void NcclNodeComm::allreduce(const void* send, void* recv, size_t count, matex_dtype_t dtype, matex_op_t op,
                             cudaStream_t stream) {
  check_nccl(ncclAllReduce(send, recv, count, nccl_datatype(dtype), nccl_op(op), comm_, stream), "ncclAllReduce");
}

void NcclNodeComm::reduce_scatter(const void* send, void* recv, size_t recvcount, matex_dtype_t dtype,
                                  matex_op_t op, cudaStream_t stream) {
  check_nccl(ncclReduceScatter(send, recv, recvcount, nccl_datatype(dtype), nccl_op(op), comm_, stream),
             "ncclReduceScatter");
}

void NcclNodeComm::allgather(const void* send, void* recv, size_t sendcount, matex_dtype_t dtype,
                             cudaStream_t stream) {
  check_nccl(ncclAllGather(send, recv, sendcount, nccl_datatype(dtype), comm_, stream), "ncclAllGather");
}

void NcclNodeComm::broadcast(const void* send, void* recv, size_t count, matex_dtype_t dtype, int root,
                             cudaStream_t stream) {
  check_nccl(ncclBroadcast(send, recv, count, nccl_datatype(dtype), root, comm_, stream), "ncclBroadcast");
}

void NcclNodeComm::reduce(const void* send, void* recv, size_t count, matex_dtype_t dtype, matex_op_t op, int root,
                          cudaStream_t stream) {
  check_nccl(ncclReduce(send, recv, count, nccl_datatype(dtype), nccl_op(op), root, comm_, stream), "ncclReduce");
}

void NcclNodeComm::group_begin() { check_nccl(ncclGroupStart(), "ncclGroupStart"); }
void NcclNodeComm::group_end() { check_nccl(ncclGroupEnd(), "ncclGroupEnd"); }

}  // namespace matexcomm::gpu
