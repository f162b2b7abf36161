// mpi_errors.h - a failure of libmatexcomm, or of MPI inside a served call,
// reported the way MPI reports errors: through the communicator's error
// handler, so that MPI_ERRORS_RETURN gets the code back and
// MPI_ERRORS_ARE_FATAL ends the job as MPI itself would.
#pragma once

#include <mpi.h>

#include <new>

#include "matexcomm/matexcomm.h"

namespace matexinterpose {

// Prints libmatexcomm's message (it names the argument or the rank at fault)
// on stderr, then raises an MPI error class on `comm`. Returns the code.
int raise_on(MPI_Comm comm, const char* entry, matex_status_t status);

// For an MPI error met inside a served call (packing a datatype, ...).
int raise_mpi_on(MPI_Comm comm, const char* entry, int code);

// Runs an entry point's body so that no C++ exception crosses it: running out
// of memory for scratch space or a state raises MPI_ERR_NO_MEM on comm,
// anything else MPI_ERR_INTERN.
template <class Body>
int without_exceptions(MPI_Comm comm, const char* entry, Body&& body) noexcept {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return raise_mpi_on(comm, entry, MPI_ERR_NO_MEM);
  } catch (...) {
    return raise_mpi_on(comm, entry, MPI_ERR_INTERN);
  }
}

}  // namespace matexinterpose
