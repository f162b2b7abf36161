// mpi_baseline.h - the plain MPI collective on MPI_COMM_WORLD that --compare
// mpi times next to ours: MPI_Allreduce, MPI_Bcast, MPI_Allgather and
// MPI_Reduce_scatter_block, in place with MPI_IN_PLACE.
//
// float16 and bfloat16 travel as MPI_UINT16_T with commutative user ops that
// widen to float32, combine and round to nearest even; avg is MPI_SUM
// followed by a division by the world size (inside the timed call).
#pragma once

#include <mpi.h>

#include <cstddef>

#include "matexcomm/matexcomm.h"

namespace matexbench {

class MpiBaseline {
 public:
  MpiBaseline();   // creates the user ops: MPI must be initialized
  ~MpiBaseline();  // frees them: MPI must not be finalized yet
  MpiBaseline(const MpiBaseline&) = delete;
  MpiBaseline& operator=(const MpiBaseline&) = delete;

  // Same arguments as the matex call; send == nullptr means in place.
  // `count` is the matex count (per rank for allgather and reduce_scatter).
  // Throws std::runtime_error when count exceeds INT_MAX.
  void run(matex_collective_t coll, const void* send, void* recv, size_t count, matex_dtype_t dtype,
           matex_op_t op, int root) const;

 private:
  MPI_Op reduction(matex_dtype_t dtype, matex_op_t op) const;
  MPI_Op half_ops_[2][4];  // [float16, bfloat16][sum, prod, min, max]
  int world_size_ = 1;
};

// The MPI datatype carrying `dtype` (MPI_UINT16_T for the 16-bit floats).
MPI_Datatype mpi_datatype(matex_dtype_t dtype);

}  // namespace matexbench
