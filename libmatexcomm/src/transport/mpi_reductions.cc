#include "transport/mpi_reductions.h"

#include <algorithm>
#include <climits>
#include <string>

#include "core/dtype.h"
#include "core/error.h"
#include "core/mpi_handles.h"
#include "core/reduce_kernels.h"

namespace matexcomm {

namespace {

constexpr size_t kMaxMpiCount = static_cast<size_t>(INT_MAX) / 2;

template <matex_dtype_t Dtype, matex_op_t Op>
void half_user_op(void* in, void* inout, int* len, MPI_Datatype*) {
  reduce_into(Dtype, Op, inout, in, static_cast<size_t>(*len));
}

using UserFunction = void (*)(void*, void*, int*, MPI_Datatype*);

template <matex_dtype_t Dtype>
constexpr UserFunction kHalfFunctions[4] = {half_user_op<Dtype, MATEX_SUM>, half_user_op<Dtype, MATEX_PROD>,
                                            half_user_op<Dtype, MATEX_MIN>, half_user_op<Dtype, MATEX_MAX>};

int op_index(matex_op_t op) {
  if (op == MATEX_AVG) return 0;
  if (static_cast<int>(op) < 0 || static_cast<int>(op) >= 4) {
    MATEX_RAISE(MATEX_ERR_INTERNAL, std::string("no float16/bfloat16 MPI op for op = ") + op_name(op));
  }
  return static_cast<int>(op);
}

}  // namespace

MpiReductions::MpiReductions() {
  for (int i = 0; i < 4; ++i) {
    check_mpi(MPI_Op_create(reinterpret_cast<MPI_User_function*>(kHalfFunctions<MATEX_FLOAT16>[i]), 1,
                            &half_ops_[0][i]),
              "MPI_Op_create(float16)");
    check_mpi(MPI_Op_create(reinterpret_cast<MPI_User_function*>(kHalfFunctions<MATEX_BFLOAT16>[i]), 1,
                            &half_ops_[1][i]),
              "MPI_Op_create(bfloat16)");
  }
}

MpiReductions::~MpiReductions() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  for (auto& row : half_ops_) {
    for (MPI_Op& op : row) MPI_Op_free(&op);
  }
}

MPI_Datatype MpiReductions::datatype(matex_dtype_t dtype) {
  switch (dtype) {
    case MATEX_INT8: return MPI_INT8_T;
    case MATEX_UINT8: case MATEX_BOOL: return MPI_UINT8_T;
    case MATEX_INT16: return MPI_INT16_T;
    case MATEX_UINT16: return MPI_UINT16_T;
    case MATEX_INT32: return MPI_INT32_T;
    case MATEX_UINT32: return MPI_UINT32_T;
    case MATEX_INT64: return MPI_INT64_T;
    case MATEX_UINT64: return MPI_UINT64_T;
    case MATEX_FLOAT16: case MATEX_BFLOAT16: return MPI_UINT16_T;
    case MATEX_FLOAT32: return MPI_FLOAT;
    case MATEX_FLOAT64: return MPI_DOUBLE;
    default: MATEX_RAISE(MATEX_ERR_INTERNAL, "no MPI datatype for an unknown dtype");
  }
}

MPI_Op MpiReductions::op(matex_dtype_t dtype, matex_op_t op) const {
  if (dtype == MATEX_FLOAT16) return half_ops_[0][op_index(op)];
  if (dtype == MATEX_BFLOAT16) return half_ops_[1][op_index(op)];
  if (dtype == MATEX_BOOL) {  // bytes 0/1: or is a max, and is a min
    switch (op) {
      case MATEX_SUM: case MATEX_MAX: case MATEX_AVG: return MPI_MAX;
      case MATEX_PROD: case MATEX_MIN: return MPI_MIN;
      default: break;  // the bitwise ops as for any integer
    }
  }
  switch (op) {
    case MATEX_SUM: case MATEX_AVG: return MPI_SUM;
    case MATEX_PROD: return MPI_PROD;
    case MATEX_MIN: return MPI_MIN;
    case MATEX_MAX: return MPI_MAX;
    case MATEX_BAND: return MPI_BAND;
    case MATEX_BOR: return MPI_BOR;
    case MATEX_BXOR: return MPI_BXOR;
    default: MATEX_RAISE(MATEX_ERR_INTERNAL, "no MPI op for an unknown op");
  }
}

void MpiReductions::allreduce(MPI_Comm comm, const void* send, void* recv, size_t count, matex_dtype_t dtype,
                              matex_op_t reduction) const {
  char* bytes = static_cast<char*>(recv);
  const char* source = static_cast<const char*>(send);
  const size_t element = dtype_size(dtype);
  for (size_t done = 0; done < count;) {
    size_t piece = std::min(kMaxMpiCount, count - done);
    const void* piece_send = source != nullptr ? static_cast<const void*>(source + done * element) : MPI_IN_PLACE;
    check_mpi(MPI_Allreduce(piece_send, bytes + done * element, static_cast<int>(piece), datatype(dtype),
                            op(dtype, reduction), comm),
              "MPI_Allreduce");
    done += piece;
  }
}

void mpi_broadcast(MPI_Comm comm, void* buffer, size_t count, matex_dtype_t dtype, int root) {
  char* bytes = static_cast<char*>(buffer);
  const size_t element = dtype_size(dtype);
  for (size_t done = 0; done < count;) {
    size_t piece = std::min(kMaxMpiCount, count - done);
    check_mpi(MPI_Bcast(bytes + done * element, static_cast<int>(piece), MpiReductions::datatype(dtype), root, comm),
              "MPI_Bcast");
    done += piece;
  }
}

}  // namespace matexcomm
