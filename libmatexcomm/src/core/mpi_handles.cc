#include "core/mpi_handles.h"

#include "core/error.h"

namespace matexcomm {

void check_mpi(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING] = {0};
  int length = 0;
  MPI_Error_string(rc, text, &length);
  throw Error(MATEX_ERR_MPI, std::string(what) + " failed: " + std::string(text, length));
}

int UniqueComm::rank() const {
  int value = -1;
  check_mpi(MPI_Comm_rank(comm_, &value), "MPI_Comm_rank");
  return value;
}

int UniqueComm::size() const {
  int value = 0;
  check_mpi(MPI_Comm_size(comm_, &value), "MPI_Comm_size");
  return value;
}

void UniqueComm::reset() noexcept {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (comm_ != MPI_COMM_NULL && !finalized) MPI_Comm_free(&comm_);
  comm_ = MPI_COMM_NULL;
}

UniqueComm UniqueComm::duplicate(MPI_Comm parent) {
  MPI_Comm copy = MPI_COMM_NULL;
  check_mpi(MPI_Comm_dup(parent, &copy), "MPI_Comm_dup");
  UniqueComm owned(copy);
  check_mpi(MPI_Comm_set_errhandler(copy, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
  return owned;
}

UniqueComm UniqueComm::split(MPI_Comm parent, int color, int key) {
  MPI_Comm part = MPI_COMM_NULL;
  check_mpi(MPI_Comm_split(parent, color, key, &part), "MPI_Comm_split");
  UniqueComm owned(part);
  if (owned.valid()) {
    check_mpi(MPI_Comm_set_errhandler(part, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
  }
  return owned;
}

}  // namespace matexcomm
