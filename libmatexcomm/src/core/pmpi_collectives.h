// pmpi_collectives.h - forced into every source file of the library (the
// matex_call_pmpi_collectives() CMake function passes -include), so that the
// library calls the PMPI_ names of the collectives that libmatexcomm_mpi.so
// (libmatexcomm/interposer) defines.
//
// Why: when the interposer is preloaded, an MPI_Allreduce that the library
// itself issues (an agreement, a flat algorithm, the MPI leg of a hierarchy)
// would otherwise bind to the interposer's definition and come back in. With
// these names the library always reaches the MPI library directly, interposer
// or not. The cost: a PMPI-based profiler (mpiP, Score-P) sees these calls of
// ours only as the user's call that contained them.
//
// The list is the interposer's collectives. The test interposer.no_reentry
// fails when libmatexcomm.so imports any MPI_ symbol that libmatexcomm_mpi.so
// defines. Everything else, point to point, communicator management and
// MPI_Init_thread included, keeps its MPI_ name.
#pragma once

#include <mpi.h>

#define MPI_Allreduce PMPI_Allreduce
#define MPI_Reduce PMPI_Reduce
#define MPI_Bcast PMPI_Bcast
#define MPI_Allgather PMPI_Allgather
#define MPI_Allgatherv PMPI_Allgatherv
#define MPI_Reduce_scatter_block PMPI_Reduce_scatter_block
#define MPI_Reduce_scatter PMPI_Reduce_scatter
#define MPI_Barrier PMPI_Barrier
#define MPI_Iallreduce PMPI_Iallreduce
#define MPI_Ireduce PMPI_Ireduce
#define MPI_Ibcast PMPI_Ibcast
#define MPI_Iallgather PMPI_Iallgather
#define MPI_Iallgatherv PMPI_Iallgatherv
#define MPI_Ireduce_scatter_block PMPI_Ireduce_scatter_block
#define MPI_Ireduce_scatter PMPI_Ireduce_scatter
#define MPI_Ibarrier PMPI_Ibarrier
