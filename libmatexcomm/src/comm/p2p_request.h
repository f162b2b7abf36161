// p2p_request.h - one point-to-point send or receive in flight: the MPI
// request it owns and what an error message needs (peer, tag, count, dtype).
//
// Completion is found by polling MPI_Test with the project's backoff, so a
// wait yields its core to the peer (tests run more ranks than cores) and
// honours a timeout. Once complete, the outcome (success, or a truncated
// message reported as MATEX_ERR_MISMATCH naming the sender and both sizes) is
// kept and reported again by every later test or wait. One request may be
// tested from several threads: each poll holds the request's mutex.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <mutex>
#include <string>

#include "core/backoff.h"
#include "matexcomm/matexcomm.h"

namespace matexcomm {

class P2pRequest {
 public:
  enum class Kind { kSend, kReceive };
  // Takes ownership of `request`. peer: the destination, or the source asked
  // for (MPI_ANY_SOURCE allowed); count: the elements sent or accepted.
  P2pRequest(Kind kind, MPI_Request request, int peer, int tag, size_t count, matex_dtype_t dtype,
             BackoffPace pace);
  // A receive still pending is cancelled; a send still pending is left to MPI.
  ~P2pRequest();
  P2pRequest(const P2pRequest&) = delete;
  P2pRequest& operator=(const P2pRequest&) = delete;

  // True once complete; throws the request's failure (again on every call).
  bool test();
  // Waits at most timeout_seconds (negative: no limit); MATEX_ERR_TIMEOUT
  // naming the peer and tag on expiry, the request staying pending.
  void wait(double timeout_seconds);
  // A completed receive's sender and element count.
  int source();
  size_t received_count();

  Kind kind() const { return kind_; }
  // "receive from rank 2 (tag 7)", for messages.
  std::string describe() const;

 private:
  bool poll_locked();  // one MPI_Test; requires mutex_
  void complete_locked(int rc, const MPI_Status& status);
  void require_complete_receive_locked(const char* what);

  const Kind kind_;
  const int peer_;
  const int tag_;
  const size_t count_;
  const matex_dtype_t dtype_;
  const BackoffPace pace_;
  std::mutex mutex_;
  MPI_Request request_;
  bool done_ = false;
  matex_status_t outcome_ = MATEX_SUCCESS;
  std::string failure_;
  int source_ = -1;
  size_t received_ = 0;
};

}  // namespace matexcomm
