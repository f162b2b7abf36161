#include "mpi_errors.h"

#include <cstdio>

namespace matexinterpose {

namespace {

int error_class_of(matex_status_t status) {
  switch (status) {
    case MATEX_SUCCESS: return MPI_SUCCESS;
    case MATEX_ERR_INVALID_ARG: return MPI_ERR_ARG;
    case MATEX_ERR_UNSUPPORTED: return MPI_ERR_UNSUPPORTED_OPERATION;
    case MATEX_ERR_MISMATCH: return MPI_ERR_TRUNCATE;  // ranks disagree on the call's size or kind
    case MATEX_ERR_INTERNAL: return MPI_ERR_INTERN;
    default: return MPI_ERR_OTHER;
  }
}

}  // namespace

int raise_on(MPI_Comm comm, const char* entry, matex_status_t status) {
  if (status == MATEX_SUCCESS) return MPI_SUCCESS;
  int rank = -1;
  PMPI_Comm_rank(comm, &rank);
  std::fprintf(stderr, "matex interposer: %s on rank %d of its communicator failed in libmatexcomm: %s: %s\n", entry,
               rank, matex_status_string(status), matex_last_error());
  const int code = error_class_of(status);
  PMPI_Comm_call_errhandler(comm, code);
  return code;
}

int raise_mpi_on(MPI_Comm comm, const char* entry, int code) {
  if (code == MPI_SUCCESS) return MPI_SUCCESS;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  PMPI_Error_string(code, text, &length);
  std::fprintf(stderr, "matex interposer: %s failed: %s\n", entry, text);
  PMPI_Comm_call_errhandler(comm, code);
  return code;
}

}  // namespace matexinterpose
