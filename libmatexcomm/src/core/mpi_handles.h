// mpi_handles.h - RAII owners for MPI communicators and user-defined ops, and
// the translation of MPI error codes into matexcomm::Error.
#pragma once

#include <mpi.h>

#include <string>
#include <utility>

namespace matexcomm {

// Throws Error(MATEX_ERR_MPI) naming `what` and MPI's own message when rc != MPI_SUCCESS.
void check_mpi(int rc, const char* what);

// Owns an MPI communicator (freed with MPI_Comm_free unless it is MPI_COMM_NULL).
class UniqueComm {
 public:
  UniqueComm() = default;
  explicit UniqueComm(MPI_Comm comm) : comm_(comm) {}
  ~UniqueComm() { reset(); }
  UniqueComm(const UniqueComm&) = delete;
  UniqueComm& operator=(const UniqueComm&) = delete;
  UniqueComm(UniqueComm&& other) noexcept : comm_(std::exchange(other.comm_, MPI_COMM_NULL)) {}
  UniqueComm& operator=(UniqueComm&& other) noexcept {
    if (this != &other) {
      reset();
      comm_ = std::exchange(other.comm_, MPI_COMM_NULL);
    }
    return *this;
  }

  MPI_Comm get() const noexcept { return comm_; }
  bool valid() const noexcept { return comm_ != MPI_COMM_NULL; }
  int rank() const;
  int size() const;
  void reset() noexcept;

  // MPI_Comm_dup with MPI_ERRORS_RETURN installed on the copy.
  static UniqueComm duplicate(MPI_Comm parent);
  // MPI_Comm_split (color may be MPI_UNDEFINED -> invalid result) with MPI_ERRORS_RETURN.
  static UniqueComm split(MPI_Comm parent, int color, int key);

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
};

}  // namespace matexcomm
