#include "gpu/nccl_node_comm.h"

#include <cstdio>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"
#include "core/mpi_handles.h"
#include "gpu/nccl_library.h"

namespace matexcomm::gpu {

void check_nccl(ncclResult_t rc, const char* what) {
  if (rc == ncclSuccess) return;
  MATEX_RAISE(MATEX_ERR_DEVICE, std::string(what) + " failed: " + nccl_library().ncclGetErrorString(rc));
}

bool nccl_has_datatype(matex_dtype_t dtype) {
  switch (dtype) {
    case MATEX_INT16: case MATEX_UINT16: return false;  // NCCL has no 16-bit integers
    default: return dtype_valid(dtype);
  }
}

ncclDataType_t nccl_datatype(matex_dtype_t dtype) {
  switch (dtype) {
    case MATEX_INT8: return ncclInt8;
    case MATEX_UINT8: case MATEX_BOOL: return ncclUint8;
    case MATEX_INT32: return ncclInt32;
    case MATEX_UINT32: return ncclUint32;
    case MATEX_INT64: return ncclInt64;
    case MATEX_UINT64: return ncclUint64;
    case MATEX_FLOAT16: return ncclFloat16;
    case MATEX_BFLOAT16: return ncclBfloat16;
    case MATEX_FLOAT32: return ncclFloat32;
    case MATEX_FLOAT64: return ncclFloat64;
    default: break;
  }
  if (dtype_valid(dtype)) {
    MATEX_RAISE(MATEX_ERR_UNSUPPORTED, std::string("NCCL has no ") + dtype_name(dtype) + " type");
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
  if (op_valid(op)) {
    MATEX_RAISE(MATEX_ERR_UNSUPPORTED, std::string("NCCL has no ") + op_name(op) + " reduction");
  }
  MATEX_RAISE(MATEX_ERR_INVALID_ARG, "op " + std::to_string(static_cast<int>(op)) + " has no NCCL reduction");
}

std::string nccl_reduction_problem(matex_dtype_t dtype, matex_op_t op) {
  std::string missing;
  if (!nccl_has_datatype(dtype)) missing = std::string("no ") + dtype_name(dtype) + " type";
  if (op_is_bitwise(op)) missing += std::string(missing.empty() ? "" : " and ") + "no bitwise reductions";
  if (missing.empty()) return "";
  return std::string("the NCCL device path cannot reduce dtype = ") + dtype_name(dtype) + " with op = " +
         op_name(op) + " (NCCL has " + missing + "); use host buffers or MATEX_CUDA_ALGO=staged";
}

NcclReduction nccl_reduction(matex_dtype_t dtype, matex_op_t op) {
  const std::string problem = nccl_reduction_problem(dtype, op);
  if (!problem.empty()) MATEX_RAISE(MATEX_ERR_UNSUPPORTED, problem);
  if (dtype == MATEX_BOOL) {  // bytes 0/1: or is a max, and is a min
    const bool is_and = op == MATEX_PROD || op == MATEX_MIN;
    return {ncclUint8, is_and ? ncclMin : ncclMax};
  }
  return {nccl_datatype(dtype), nccl_op(op)};
}

NcclElements nccl_elements(matex_dtype_t dtype, size_t count) {
  if (nccl_has_datatype(dtype)) return {nccl_datatype(dtype), count};
  return {ncclUint8, count * dtype_size(dtype)};  // data movement only: bytes are bytes
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

// Loads NCCL (nccl_library.h) and agrees over the node that every rank has
// it, so a rank without it stops the node's ranks alike instead of leaving
// them in a collective it never joins.
const NcclLibrary& load_nccl_on_every_rank(MPI_Comm node) {
  const NcclLibrary* library = nullptr;
  std::string problem;
  try {
    library = &nccl_library();
  } catch (const Error& error) {
    problem = error.message();
  }
  int mine = library != nullptr ? 1 : 0;
  int all = 0;
  check_mpi(MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, node), "MPI_Allreduce of NCCL's availability");
  if (all == 0) {
    MATEX_RAISE(MATEX_ERR_DEVICE, problem.empty() ? std::string("NCCL could not be loaded on another rank of this node")
                                                  : problem);
  }
  return *library;
}

}  // namespace

NcclNodeComm::NcclNodeComm(MPI_Comm node, int local_rank, int local_size)
    : nccl_(&load_nccl_on_every_rank(node)), rank_(local_rank), size_(local_size) {
  require_distinct_gpus(node, local_size);
  // The id travels with local rank 0's status, so a failure there stops every rank of the node.
  struct {
    int ok;
    ncclUniqueId id;
  } shared{};
  std::string root_problem;
  if (local_rank == 0) {
    ncclResult_t rc = nccl_->ncclGetUniqueId(&shared.id);
    shared.ok = rc == ncclSuccess ? 1 : 0;
    if (rc != ncclSuccess) root_problem = nccl_->ncclGetErrorString(rc);
  }
  check_mpi(MPI_Bcast(&shared, sizeof shared, MPI_BYTE, 0, node), "MPI_Bcast of the NCCL unique id");
  if (!shared.ok) {
    MATEX_RAISE(MATEX_ERR_DEVICE, "ncclGetUniqueId failed on local rank 0" +
                                      (root_problem.empty() ? std::string() : ": " + root_problem));
  }
  const ncclUniqueId& id = shared.id;
  ncclComm_t comm = nullptr;
  ncclResult_t rc = nccl_->ncclCommInitRank(&comm, local_size, id, local_rank);
  if (rc != ncclSuccess) {
    if (comm != nullptr) (void)nccl_->ncclCommAbort(comm);
    check_nccl(rc, "ncclCommInitRank of the node's NCCL communicator");
  }
  comm_ = comm;
}

NcclNodeComm::~NcclNodeComm() {
  if (comm_ != nullptr) (void)nccl_->ncclCommDestroy(comm_);
}

void NcclNodeComm::allreduce(const void* send, void* recv, size_t count, matex_dtype_t dtype, matex_op_t op,
                             cudaStream_t stream) {
  const NcclReduction r = nccl_reduction(dtype, op);
  check_nccl(nccl_->ncclAllReduce(send, recv, count, r.type, r.op, comm_, stream), "ncclAllReduce");
}

void NcclNodeComm::reduce_scatter(const void* send, void* recv, size_t recvcount, matex_dtype_t dtype,
                                  matex_op_t op, cudaStream_t stream) {
  const NcclReduction r = nccl_reduction(dtype, op);
  check_nccl(nccl_->ncclReduceScatter(send, recv, recvcount, r.type, r.op, comm_, stream), "ncclReduceScatter");
}

void NcclNodeComm::allgather(const void* send, void* recv, size_t sendcount, matex_dtype_t dtype,
                             cudaStream_t stream) {
  const NcclElements e = nccl_elements(dtype, sendcount);
  check_nccl(nccl_->ncclAllGather(send, recv, e.count, e.type, comm_, stream), "ncclAllGather");
}

void NcclNodeComm::broadcast(const void* send, void* recv, size_t count, matex_dtype_t dtype, int root,
                             cudaStream_t stream) {
  const NcclElements e = nccl_elements(dtype, count);
  check_nccl(nccl_->ncclBroadcast(send, recv, e.count, e.type, root, comm_, stream), "ncclBroadcast");
}

void NcclNodeComm::reduce(const void* send, void* recv, size_t count, matex_dtype_t dtype, matex_op_t op, int root,
                          cudaStream_t stream) {
  const NcclReduction r = nccl_reduction(dtype, op);
  check_nccl(nccl_->ncclReduce(send, recv, count, r.type, r.op, root, comm_, stream), "ncclReduce");
}

void NcclNodeComm::group_begin() { check_nccl(nccl_->ncclGroupStart(), "ncclGroupStart"); }
void NcclNodeComm::group_end() { check_nccl(nccl_->ncclGroupEnd(), "ncclGroupEnd"); }

}  // namespace matexcomm::gpu
