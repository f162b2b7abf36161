/*
 * matexcomm_mpi.h - create a libmatexcomm communicator over a caller's MPI
 * communicator. Separate from matexcomm.h so that users who never touch MPI
 * need not include <mpi.h>.
 */
#ifndef MATEXCOMM_MATEXCOMM_MPI_H
#define MATEXCOMM_MATEXCOMM_MPI_H

#include <mpi.h>

#include "matexcomm/matexcomm.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Collective over mpi_comm. MPI must already be initialized. The library
 * duplicates mpi_comm; the caller keeps ownership of its own handle. */
MATEX_API matex_status_t matex_init_mpi(MPI_Comm mpi_comm, matex_comm_t* comm);

#ifdef __cplusplus
}
#endif

#endif /* MATEXCOMM_MATEXCOMM_MPI_H */
