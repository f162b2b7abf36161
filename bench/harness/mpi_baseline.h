// mpi_baseline.h - what the plain MPI collectives on MPI_COMM_WORLD that
// --compare mpi times next to ours need (each collective's descriptor makes
// its call: MPI_Allreduce, MPI_Bcast, MPI_Allgather or
// MPI_Reduce_scatter_block, in place with MPI_IN_PLACE).
//
// float16 and bfloat16 travel as MPI_UINT16_T with commutative user ops that
// widen to float32, combine and round to nearest even; avg is MPI_SUM
// followed by a division by the world size (inside the timed call).
#pragma once

#include <mpi.h>

#include <cstddef>

#include "case_spec.h"
#include "matexcomm/matexcomm.h"

namespace matexbench {

class MpiBaseline {
 public:
  MpiBaseline();   // creates the user ops: MPI must be initialized
  ~MpiBaseline();  // frees them: MPI must not be finalized yet
  MpiBaseline(const MpiBaseline&) = delete;
  MpiBaseline& operator=(const MpiBaseline&) = delete;

  // The MPI op that computes `op` on `dtype` (avg: the sum; finish() divides).
  MPI_Op reduction(matex_dtype_t dtype, matex_op_t op) const;
  // `count` as MPI's int count; std::runtime_error beyond INT_MAX.
  static int int_count(size_t count);
  // After a reducing call of `spec` into recv: divides by the ranks for avg.
  void finish(const CaseSpec& spec, void* recv) const;

 private:
  MPI_Op half_ops_[2][4];  // [float16, bfloat16][sum, prod, min, max]
  int world_size_ = 1;
};

// The MPI datatype carrying `dtype` (MPI_UINT16_T for the 16-bit floats).
MPI_Datatype mpi_datatype(matex_dtype_t dtype);

}  // namespace matexbench
