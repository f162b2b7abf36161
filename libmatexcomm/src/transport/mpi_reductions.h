// mpi_reductions.h - how a (dtype, op) pair is spelled for MPI, and chunked MPI
// calls that accept 64-bit counts.
//
// Native types use MPI's built-in datatypes and ops. float16 and bfloat16 have
// no MPI type in MPI 3.1, so they travel as MPI_UINT16_T with user-defined
// commutative ops that call our float32-accumulating kernels (they have no
// bitwise ops). bool travels as MPI_UINT8_T: sum and max as MPI_MAX (a logical
// or on bytes 0/1), prod and min as MPI_MIN (a logical and). MATEX_AVG is sent
// as a sum; callers divide once at the end.
#pragma once

#include <mpi.h>

#include <cstddef>

#include "matexcomm/matexcomm.h"

namespace matexcomm {

class MpiReductions {
 public:
  MpiReductions();  // MPI must be initialized
  ~MpiReductions();
  MpiReductions(const MpiReductions&) = delete;
  MpiReductions& operator=(const MpiReductions&) = delete;

  static MPI_Datatype datatype(matex_dtype_t dtype);
  MPI_Op op(matex_dtype_t dtype, matex_op_t op) const;

  // MPI_Allreduce over `comm`, split into pieces of at most INT_MAX/2 elements.
  // send == nullptr means in place (the data is already in recv).
  void allreduce(MPI_Comm comm, const void* send, void* recv, size_t count, matex_dtype_t dtype,
                 matex_op_t op) const;
  void allreduce_in_place(MPI_Comm comm, void* buffer, size_t count, matex_dtype_t dtype, matex_op_t op) const {
    allreduce(comm, nullptr, buffer, count, dtype, op);
  }

 private:
  MPI_Op half_ops_[2][4];  // [float16, bfloat16][sum, prod, min, max]
};

// MPI_Bcast split into pieces of at most INT_MAX elements.
void mpi_broadcast(MPI_Comm comm, void* buffer, size_t count, matex_dtype_t dtype, int root);

}  // namespace matexcomm
