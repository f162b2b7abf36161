// mpi_errors.h - a failure of libmatexcomm, or of MPI inside a served call,
// reported the way MPI reports errors: through the communicator's error
// handler, so that MPI_ERRORS_RETURN gets the code back and
// MPI_ERRORS_ARE_FATAL ends the job as MPI itself would.
#pragma once

#include <mpi.h>

#include "matexcomm/matexcomm.h"

namespace matexinterpose {

// Prints libmatexcomm's message (it names the argument or the rank at fault)
// on stderr, then raises an MPI error class on `comm`. Returns the code.
int raise_on(MPI_Comm comm, const char* entry, matex_status_t status);

// For an MPI error met inside a served call (packing a datatype, ...).
int raise_mpi_on(MPI_Comm comm, const char* entry, int code);

}  // namespace matexinterpose
