// request_state.h - the completion state of one submitted tensor, shared by
// the caller's handle and the engine.
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "matexcomm/matexcomm.h"

namespace matexcomm {

// Counts completions down for one waiter of many requests, so that it wakes
// once, when the last completes, rather than once per request.
class CompletionLatch {
 public:
  explicit CompletionLatch(size_t count) : remaining_(count) {}
  void count_down(size_t times = 1) {
    std::lock_guard<std::mutex> lock(mutex_);
    remaining_ -= times;
    if (remaining_ == 0) zero_.notify_all();
  }
  void wait() {
    std::unique_lock<std::mutex> lock(mutex_);
    zero_.wait(lock, [&] { return remaining_ == 0; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable zero_;
  size_t remaining_;
};

class RequestState {
 public:
  RequestState(matex_completion_fn callback, void* user_data) : callback_(callback), user_data_(user_data) {}

  // Called once by the engine: runs the callback, then records the outcome and
  // wakes waiters (so that a waiter that frees user_data never races the callback).
  // The outcome is known to succeeded() (so matex_request_output works inside
  // the callback) before the callback runs.
  void complete(matex_status_t status, const std::string& message) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      status_ = status;
      message_ = message;
      outcome_known_ = true;
    }
    if (callback_ != nullptr) callback_(status, message.c_str(), user_data_);
    std::vector<std::shared_ptr<CompletionLatch>> latches;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      done_ = true;
      latches.swap(latches_);
    }
    done_cv_.notify_all();
    for (const auto& latch : latches) latch->count_down();
  }

  // Counts `latch` down on completion; false (and nothing kept) if already complete.
  bool count_down_when_done(std::shared_ptr<CompletionLatch> latch) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (done_) return false;
    latches_.push_back(std::move(latch));
    return true;
  }

  // Blocks until complete; returns the outcome.
  matex_status_t wait(std::string* message) {
    std::unique_lock<std::mutex> lock(mutex_);
    done_cv_.wait(lock, [&] { return done_; });
    if (message != nullptr) *message = message_;
    return status_;
  }

  // An allgather's result; written by the engine before complete().
  std::vector<char>& output() { return output_; }
  size_t& output_rows() { return output_rows_; }
  bool succeeded() {
    std::lock_guard<std::mutex> lock(mutex_);
    return outcome_known_ && status_ == MATEX_SUCCESS;
  }

  bool test(matex_status_t* status, std::string* message) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (done_) {
      *status = status_;
      *message = message_;
    }
    return done_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable done_cv_;
  bool outcome_known_ = false;  // set before the callback runs
  bool done_ = false;           // set after it returned
  matex_status_t status_ = MATEX_SUCCESS;
  std::string message_;
  std::vector<std::shared_ptr<CompletionLatch>> latches_;  // of waiters on many requests
  matex_completion_fn callback_;
  void* user_data_;
  std::vector<char> output_;
  size_t output_rows_ = 0;
};

}  // namespace matexcomm
