// nccl_node_comm.h - the NCCL communicator of one node: its ranks are the
// node's ranks (local rank = NCCL rank), each on the GPU that was current
// when it was created. The unique id travels over the node's MPI
// communicator. Every call enqueues on the given stream and returns; results
// follow stream order.
#pragma once

#include <cuda_runtime.h>
#include <mpi.h>
#include <nccl.h>

#include <cstddef>
#include <string>

#include "gpu/nccl_library.h"
#include "matexcomm/matexcomm.h"

namespace matexcomm::gpu {

// Throws Error(MATEX_ERR_DEVICE) "<what>: <ncclGetErrorString>" when rc != ncclSuccess.
void check_nccl(ncclResult_t rc, const char* what);

// NCCL's type of dtype (bool: ncclUint8). Error(MATEX_ERR_UNSUPPORTED) for
// int16 and uint16, which NCCL lacks.
ncclDataType_t nccl_datatype(matex_dtype_t dtype);
bool nccl_has_datatype(matex_dtype_t dtype);
// MATEX_AVG maps to ncclSum: callers scale once at the end. Error(MATEX_ERR_UNSUPPORTED)
// for band, bor and bxor, which NCCL lacks.
ncclRedOp_t nccl_op(matex_op_t op);

// Why NCCL cannot reduce (dtype, op): int16/uint16 or a bitwise op; "" when it
// can. Depends on the arguments only, so every rank decides alike before any
// communication.
std::string nccl_reduction_problem(matex_dtype_t dtype, matex_op_t op);

// How NCCL spells a reduction: bool reduces as ncclUint8 with ncclMax (sum,
// max: a logical or) or ncclMin (prod, min: a logical and). Throws
// Error(MATEX_ERR_UNSUPPORTED) with nccl_reduction_problem's message.
struct NcclReduction {
  ncclDataType_t type;
  ncclRedOp_t op;
};
NcclReduction nccl_reduction(matex_dtype_t dtype, matex_op_t op);

// How NCCL moves `count` elements of dtype without reducing them: in its own
// type, or as bytes for the types NCCL lacks.
struct NcclElements {
  ncclDataType_t type;
  size_t count;
};
NcclElements nccl_elements(matex_dtype_t dtype, size_t count);

class NcclNodeComm {
 public:
  // Collective over `node`. Throws Error(MATEX_ERR_DEVICE) when NCCL refuses
  // (e.g. two ranks of the node on one GPU); the caller decides what then.
  // NCCL itself is loaded here on first use (nccl_library.h); a rank of the
  // node that cannot load it makes every rank of the node throw.
  NcclNodeComm(MPI_Comm node, int local_rank, int local_size);
  ~NcclNodeComm();
  NcclNodeComm(const NcclNodeComm&) = delete;
  NcclNodeComm& operator=(const NcclNodeComm&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  const NcclLibrary& library() const { return *nccl_; }

  // The reductions throw Error(MATEX_ERR_UNSUPPORTED) before enqueuing
  // anything when nccl_reduction_problem is not empty.
  void allreduce(const void* send, void* recv, size_t count, matex_dtype_t dtype, matex_op_t op,
                 cudaStream_t stream);
  // recv (recvcount elements) = block `rank` of the reduction of send (size*recvcount).
  void reduce_scatter(const void* send, void* recv, size_t recvcount, matex_dtype_t dtype, matex_op_t op,
                      cudaStream_t stream);
  // recv (size*sendcount) = every rank's send, in rank order.
  void allgather(const void* send, void* recv, size_t sendcount, matex_dtype_t dtype, cudaStream_t stream);
  void broadcast(const void* send, void* recv, size_t count, matex_dtype_t dtype, int root, cudaStream_t stream);
  // recv on root = reduction of every rank's send (recv unused elsewhere).
  void reduce(const void* send, void* recv, size_t count, matex_dtype_t dtype, matex_op_t op, int root,
              cudaStream_t stream);

  // Calls between group_begin and group_end are launched together (use NcclGroup).
  void group_begin();
  void group_end();

 private:
  const NcclLibrary* nccl_;
  ncclComm_t comm_ = nullptr;
  int rank_ = 0;
  int size_ = 1;
};

// Scope of one NCCL group: finish() launches it (and reports its errors); a
// group left by an exception is closed in the destructor.
class NcclGroup {
 public:
  explicit NcclGroup(NcclNodeComm& comm) : comm_(comm) { comm_.group_begin(); }
  ~NcclGroup() {
    if (open_) (void)comm_.library().ncclGroupEnd();
  }
  NcclGroup(const NcclGroup&) = delete;
  NcclGroup& operator=(const NcclGroup&) = delete;
  void finish() {
    open_ = false;
    comm_.group_end();
  }

 private:
  NcclNodeComm& comm_;
  bool open_ = true;
};

}  // namespace matexcomm::gpu
