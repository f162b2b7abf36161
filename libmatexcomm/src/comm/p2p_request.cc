#include "comm/p2p_request.h"

#include <cstdio>

#include "core/dtype.h"
#include "core/error.h"
#include "core/mpi_handles.h"
#include "transport/mpi_reductions.h"

namespace matexcomm {

namespace {

std::string mpi_error_text(int rc) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(rc, text, &length) != MPI_SUCCESS) return "MPI error " + std::to_string(rc);
  return std::string(text, length);
}

bool mpi_finalized() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  return finalized != 0;
}

}  // namespace

P2pRequest::P2pRequest(Kind kind, MPI_Request request, int peer, int tag, size_t count, matex_dtype_t dtype,
                       BackoffPace pace)
    : kind_(kind), peer_(peer), tag_(tag), count_(count), dtype_(dtype), pace_(pace), request_(request) {}

P2pRequest::~P2pRequest() {
  if (done_ || request_ == MPI_REQUEST_NULL || mpi_finalized()) return;
  if (kind_ == Kind::kReceive) {
    // Cancelled, or (when a message matched meanwhile) received; either way complete.
    MPI_Cancel(&request_);
    MPI_Wait(&request_, MPI_STATUS_IGNORE);
  } else {
    MPI_Request_free(&request_);
  }
}

std::string P2pRequest::describe() const {
  if (kind_ == Kind::kSend) return "send to rank " + std::to_string(peer_) + " (tag " + std::to_string(tag_) + ")";
  const std::string from = peer_ == MPI_ANY_SOURCE ? "any rank" : "rank " + std::to_string(peer_);
  return "receive from " + from + " (tag " + std::to_string(tag_) + ")";
}

void P2pRequest::complete_locked(int rc, const MPI_Status& status) {
  done_ = true;
  request_ = MPI_REQUEST_NULL;
  if (kind_ == Kind::kReceive) {
    source_ = status.MPI_SOURCE;
    int elements = 0;
    if (MPI_Get_count(&status, MpiReductions::datatype(dtype_), &elements) == MPI_SUCCESS && elements >= 0) {
      received_ = static_cast<size_t>(elements);
    }
  }
  if (rc == MPI_SUCCESS) return;
  int error_class = MPI_ERR_OTHER;
  MPI_Error_class(rc, &error_class);
  if (error_class == MPI_ERR_TRUNCATE) {
    outcome_ = MATEX_ERR_MISMATCH;
    // MPI libraries that report the sender's size (Open MPI does) let the message name both sizes.
    const std::string sent = received_ > count_ ? std::to_string(received_) + " elements" : "more elements";
    failure_ = describe() + ": rank " + std::to_string(source_) + " sent " + sent + " of " + dtype_name(dtype_) +
               ", but this receive accepts at most count = " + std::to_string(count_) + "; the message is lost";
  } else {
    outcome_ = MATEX_ERR_MPI;
    failure_ = describe() + " failed: " + mpi_error_text(rc);
  }
}

bool P2pRequest::poll_locked() {
  if (done_) return true;
  int finished = 0;
  MPI_Status status;
  status.MPI_SOURCE = MPI_PROC_NULL;
  const int rc = MPI_Test(&request_, &finished, &status);
  if (rc != MPI_SUCCESS) finished = 1;  // an error completes the request (MPI_ERRORS_RETURN)
  if (finished) complete_locked(rc, status);
  return done_;
}

bool P2pRequest::test() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!poll_locked()) return false;
  if (outcome_ != MATEX_SUCCESS) MATEX_RAISE(outcome_, failure_);
  return true;
}

void P2pRequest::wait(double timeout_seconds) {
  // No limit is a deadline beyond any job's lifetime (30 years).
  Backoff backoff(timeout_seconds < 0 ? 1e9 : timeout_seconds, pace_);
  while (!test()) {
    if (!backoff.pause()) {
      char seconds[32];
      std::snprintf(seconds, sizeof seconds, "%g", timeout_seconds);
      MATEX_RAISE(MATEX_ERR_TIMEOUT, describe() + " did not complete within " + seconds +
                                         " s; it is still pending (wait again or free it)");
    }
  }
}

void P2pRequest::require_complete_receive_locked(const char* what) {
  MATEX_REQUIRE(kind_ == Kind::kReceive, MATEX_ERR_INVALID_ARG,
                std::string("request is a ") + describe() + "; only a receive has a " + what);
  MATEX_REQUIRE(poll_locked(), MATEX_ERR_INVALID_ARG,
                std::string("request (") + describe() + ") has not completed yet, so it has no " + what);
  if (outcome_ != MATEX_SUCCESS) MATEX_RAISE(outcome_, failure_);
}

int P2pRequest::source() {
  std::lock_guard<std::mutex> lock(mutex_);
  require_complete_receive_locked("source");
  return source_;
}

size_t P2pRequest::received_count() {
  std::lock_guard<std::mutex> lock(mutex_);
  require_complete_receive_locked("count");
  return received_;
}

}  // namespace matexcomm
