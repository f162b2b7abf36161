// matexcomm.hpp - header-only C++17 RAII wrapper over the C API.
//
//   matex::Communicator comm;                 // matex_init over MPI_COMM_WORLD
//   comm.allreduce(in.data(), out.data(), n, MATEX_FLOAT32, MATEX_SUM);
//                                             // ~Communicator calls matex_finalize
//
// Failures throw matex::Error, which carries the status and the library's message.
#ifndef MATEXCOMM_MATEXCOMM_HPP
#define MATEXCOMM_MATEXCOMM_HPP

#include <stdexcept>
#include <string>
#include <utility>

#include "matexcomm/matexcomm.h"

namespace matex {

class Error : public std::runtime_error {
 public:
  Error(matex_status_t status, const std::string& message)
      : std::runtime_error(std::string(matex_status_string(status)) + ": " + message),
        status_(status) {}
  matex_status_t status() const noexcept { return status_; }

 private:
  matex_status_t status_;
};

inline void check(matex_status_t status) {
  if (status != MATEX_SUCCESS) throw Error(status, matex_last_error());
}

class Communicator {
 public:
  Communicator() { check(matex_init(&comm_)); }
  // Takes ownership of an initialized handle.
  explicit Communicator(matex_comm_t adopted) : comm_(adopted) {}
  ~Communicator() {
    if (comm_ != nullptr) matex_finalize(&comm_);
  }
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;
  Communicator(Communicator&& other) noexcept : comm_(std::exchange(other.comm_, nullptr)) {}
  Communicator& operator=(Communicator&& other) noexcept {
    if (this != &other) {
      if (comm_ != nullptr) matex_finalize(&comm_);
      comm_ = std::exchange(other.comm_, nullptr);
    }
    return *this;
  }

  matex_comm_t handle() const noexcept { return comm_; }

  int rank() const { return query(matex_comm_rank); }
  int size() const { return query(matex_comm_size); }
  int local_rank() const { return query(matex_comm_local_rank); }
  int local_size() const { return query(matex_comm_local_size); }
  int node_index() const { return query(matex_comm_node_index); }
  int node_count() const { return query(matex_comm_node_count); }

  void set_algorithm(matex_collective_t coll, const std::string& name) {
    check(matex_set_algorithm(comm_, coll, name.c_str()));
  }
  std::string last_algorithm(matex_collective_t coll) const {
    const char* name = nullptr;
    check(matex_last_algorithm(comm_, coll, &name));
    return name;
  }

  void allreduce(const void* send, void* recv, size_t count, matex_dtype_t dtype, matex_op_t op) {
    check(matex_allreduce(comm_, send, recv, count, dtype, op));
  }
  void broadcast(void* buffer, size_t count, matex_dtype_t dtype, int root) {
    check(matex_broadcast(comm_, buffer, count, dtype, root));
  }
  void allgather(const void* send, void* recv, size_t count, matex_dtype_t dtype) {
    check(matex_allgather(comm_, send, recv, count, dtype));
  }
  void allgatherv(const void* send, size_t sendcount, void* recv, const size_t* recvcounts,
                  const size_t* displs, matex_dtype_t dtype) {
    check(matex_allgatherv(comm_, send, sendcount, recv, recvcounts, displs, dtype));
  }
  void reduce_scatter(const void* send, void* recv, size_t recvcount, matex_dtype_t dtype,
                      matex_op_t op) {
    check(matex_reduce_scatter(comm_, send, recv, recvcount, dtype, op));
  }
  void barrier() { check(matex_barrier(comm_)); }

 private:
  int query(matex_status_t (*fn)(matex_comm_t, int*)) const {
    int value = -1;
    check(fn(comm_, &value));
    return value;
  }
  matex_comm_t comm_ = nullptr;
};

}  // namespace matex

#endif  // MATEXCOMM_MATEXCOMM_HPP
