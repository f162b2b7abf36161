// matexcomm.hpp - header-only C++17 RAII wrapper over the C API.
//
//   matex::Communicator comm;                 // matex_init over MPI_COMM_WORLD
//   comm.allreduce(in.data(), out.data(), n, MATEX_FLOAT32, MATEX_SUM);
//                                             // ~Communicator calls matex_finalize
//
//   matex::Communicator pair = comm.create_from_ranks({0, 1});   // on ranks 0 and 1 only
//   matex::P2pRequest r = comm.irecv(buf, n, MATEX_FLOAT32, MATEX_ANY_SOURCE, /*tag=*/7);
//   r.wait();                                 // or r.wait(timeout_seconds)
//
//   matex::Engine engine(comm);               // asynchronous engine (collective)
//   matex::Request r = engine.allreduce("grad/w1", in.data(), out.data(), n, MATEX_FLOAT32, MATEX_SUM);
//   r.wait();                                 // throws matex::Error if the tensor failed
//
// Failures throw matex::Error, which carries the status and the library's message.
#ifndef MATEXCOMM_MATEXCOMM_HPP
#define MATEXCOMM_MATEXCOMM_HPP

#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "matexcomm/matexcomm.h"

namespace matex {

class P2pRequest;

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

  void allreduce_premul_sum(const void* send, void* recv, size_t count, matex_dtype_t dtype, double factor) {
    check(matex_allreduce_premul_sum(comm_, send, recv, count, dtype, factor));
  }
  void reduce_scatter_premul_sum(const void* send, void* recv, size_t recvcount, matex_dtype_t dtype,
                                 double factor) {
    check(matex_reduce_scatter_premul_sum(comm_, send, recv, recvcount, dtype, factor));
  }

  void reduce(const void* send, void* recv, size_t count, matex_dtype_t dtype, matex_op_t op, int root) {
    check(matex_reduce(comm_, send, recv, count, dtype, op, root));
  }
  void gather(const void* send, void* recv, size_t count, matex_dtype_t dtype, int root) {
    check(matex_gather(comm_, send, recv, count, dtype, root));
  }
  void gatherv(const void* send, size_t sendcount, void* recv, const size_t* recvcounts, const size_t* displs,
               matex_dtype_t dtype, int root) {
    check(matex_gatherv(comm_, send, sendcount, recv, recvcounts, displs, dtype, root));
  }
  void scatter(const void* send, void* recv, size_t count, matex_dtype_t dtype, int root) {
    check(matex_scatter(comm_, send, recv, count, dtype, root));
  }
  void scatterv(const void* send, const size_t* sendcounts, const size_t* displs, void* recv, size_t recvcount,
                matex_dtype_t dtype, int root) {
    check(matex_scatterv(comm_, send, sendcounts, displs, recv, recvcount, dtype, root));
  }
  void alltoall(const void* send, void* recv, size_t count, matex_dtype_t dtype) {
    check(matex_alltoall(comm_, send, recv, count, dtype));
  }
  void alltoallv(const void* send, const size_t* sendcounts, const size_t* sdispls, void* recv,
                 const size_t* recvcounts, const size_t* rdispls, matex_dtype_t dtype) {
    check(matex_alltoallv(comm_, send, sendcounts, sdispls, recv, recvcounts, rdispls, dtype));
  }

  // Point to point (any thread; see matexcomm.h). Negative timeouts wait without limit.
  inline P2pRequest isend(const void* buf, size_t count, matex_dtype_t dtype, int dest, int tag);
  inline P2pRequest irecv(void* buf, size_t count, matex_dtype_t dtype, int source, int tag);
  void send(const void* buf, size_t count, matex_dtype_t dtype, int dest, int tag, double timeout_seconds = -1) {
    check(matex_send(comm_, buf, count, dtype, dest, tag, timeout_seconds));
  }
  // Returns the sender's rank.
  int recv(void* buf, size_t count, matex_dtype_t dtype, int source, int tag, double timeout_seconds = -1) {
    int from = -1;
    check(matex_recv(comm_, buf, count, dtype, source, tag, timeout_seconds, &from));
    return from;
  }

  // Collective over the listed ranks only; rank i of the result is ranks[i] here.
  Communicator create_from_ranks(const std::vector<int>& ranks) const {
    matex_comm_t created = nullptr;
    check(matex_comm_create_from_ranks(comm_, ranks.data(), static_cast<int>(ranks.size()), &created));
    return Communicator(created);
  }

 private:
  int query(matex_status_t (*fn)(matex_comm_t, int*)) const {
    int value = -1;
    check(fn(comm_, &value));
    return value;
  }
  matex_comm_t comm_ = nullptr;
};

// One point-to-point send or receive; frees it (cancelling a pending receive) when it goes.
class P2pRequest {
 public:
  P2pRequest() = default;
  explicit P2pRequest(matex_p2p_t adopted) : request_(adopted) {}
  ~P2pRequest() {
    if (request_ != nullptr) matex_p2p_free(&request_);
  }
  P2pRequest(const P2pRequest&) = delete;
  P2pRequest& operator=(const P2pRequest&) = delete;
  P2pRequest(P2pRequest&& other) noexcept : request_(std::exchange(other.request_, nullptr)) {}
  P2pRequest& operator=(P2pRequest&& other) noexcept {
    if (this != &other) {
      if (request_ != nullptr) matex_p2p_free(&request_);
      request_ = std::exchange(other.request_, nullptr);
    }
    return *this;
  }

  matex_p2p_t handle() const noexcept { return request_; }
  // Throws matex::Error (MATEX_ERR_TIMEOUT on expiry; the request stays pending).
  void wait(double timeout_seconds = -1) { check(matex_p2p_wait(request_, timeout_seconds)); }
  bool done() {
    int finished = 0;
    check(matex_p2p_test(request_, &finished));
    return finished != 0;
  }
  // A completed receive's sender and element count.
  int source() const {
    int from = -1;
    size_t count = 0;
    check(matex_p2p_status(request_, &from, &count));
    return from;
  }
  size_t count() const {
    int from = -1;
    size_t elements = 0;
    check(matex_p2p_status(request_, &from, &elements));
    return elements;
  }

 private:
  matex_p2p_t request_ = nullptr;
};

inline P2pRequest Communicator::isend(const void* buf, size_t count, matex_dtype_t dtype, int dest, int tag) {
  matex_p2p_t request = nullptr;
  check(matex_isend(comm_, buf, count, dtype, dest, tag, &request));
  return P2pRequest(request);
}

inline P2pRequest Communicator::irecv(void* buf, size_t count, matex_dtype_t dtype, int source, int tag) {
  matex_p2p_t request = nullptr;
  check(matex_irecv(comm_, buf, count, dtype, source, tag, &request));
  return P2pRequest(request);
}

// One submitted tensor; frees its request when it goes.
class Request {
 public:
  Request() = default;
  explicit Request(matex_request_t adopted) : request_(adopted) {}
  ~Request() {
    if (request_ != nullptr) matex_request_free(&request_);
  }
  Request(const Request&) = delete;
  Request& operator=(const Request&) = delete;
  Request(Request&& other) noexcept : request_(std::exchange(other.request_, nullptr)) {}
  Request& operator=(Request&& other) noexcept {
    if (this != &other) {
      if (request_ != nullptr) matex_request_free(&request_);
      request_ = std::exchange(other.request_, nullptr);
    }
    return *this;
  }

  void wait() { check(matex_request_wait(request_)); }
  // Waits for every request, waking once; throws the first failure in order.
  static void wait_all(const std::vector<Request>& requests) {
    std::vector<matex_request_t> raw;
    raw.reserve(requests.size());
    for (const Request& r : requests) raw.push_back(r.request_);
    check(matex_request_wait_all(raw.data(), raw.size()));
  }
  bool done() {
    int finished = 0;
    check(matex_request_test(request_, &finished));
    return finished != 0;
  }

 private:
  matex_request_t request_ = nullptr;
};

class Engine {
 public:
  explicit Engine(const Communicator& comm) { check(matex_engine_create(comm.handle(), &engine_)); }
  ~Engine() {
    if (engine_ != nullptr) matex_engine_destroy(&engine_);
  }
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  matex_engine_t handle() const noexcept { return engine_; }

  // All or none; one Request per op, in order.
  std::vector<Request> submit(const std::vector<matex_tensor_op_t>& ops) {
    std::vector<matex_request_t> raw(ops.size(), nullptr);
    check(matex_engine_submit(engine_, ops.data(), ops.size(), raw.data()));
    std::vector<Request> requests;
    requests.reserve(raw.size());
    for (matex_request_t r : raw) requests.emplace_back(r);
    return requests;
  }
  Request allreduce(const std::string& name, const void* send, void* recv, size_t count, matex_dtype_t dtype,
                    matex_op_t op, double prescale = 1.0, double postscale = 1.0) {
    matex_tensor_op_t t{};
    t.name = name.c_str();
    t.coll = MATEX_COLL_ALLREDUCE;
    t.sendbuf = send;
    t.recvbuf = recv;
    t.count = count;
    t.dtype = dtype;
    t.op = op;
    t.prescale = prescale;
    t.postscale = postscale;
    return std::move(submit({t})[0]);
  }
  Request broadcast(const std::string& name, void* buffer, size_t count, matex_dtype_t dtype, int root) {
    matex_tensor_op_t t{};
    t.name = name.c_str();
    t.coll = MATEX_COLL_BROADCAST;
    t.recvbuf = buffer;
    t.count = count;
    t.dtype = dtype;
    t.root = root;
    return std::move(submit({t})[0]);
  }
  void reset_stats() { check(matex_engine_stats_reset(engine_)); }
  matex_engine_stats_t stats() const {
    matex_engine_stats_t s{};
    check(matex_engine_stats(engine_, &s));
    return s;
  }

 private:
  matex_engine_t engine_ = nullptr;
};

}  // namespace matex

#endif  // MATEXCOMM_MATEXCOMM_HPP
