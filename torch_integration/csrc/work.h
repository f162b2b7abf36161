// work.h - the Work a matex collective returns at once, and the completion it
// waits on. The collective finishes on the group's worker thread (or inline,
// for a synchronous call with nothing queued), which marks the Completion:
// first the future (so getFuture().value() is ready once wait() returns; its
// callbacks, DDP's included, run there), then the flag wait() sleeps on. The
// future is made only when someone asks for it (DDP does, at once; a
// synchronous all_reduce never does), already complete if the call is over.
// For GPU tensors the call is over once it is queued on its CUDA stream:
// wait() then makes the caller's current stream wait for it, and the future
// (made at once, for the device) carries the stream order to its users, as
// NCCL's do.
#pragma once

#include <ATen/ATen.h>
#include <ATen/core/ivalue.h>
#include <c10/core/Event.h>
#include <c10/core/Stream.h>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include <chrono>
#include <condition_variable>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "torch_compat.h"

namespace matex_torch {

// A DistBackendError carrying `message`, to fail a Completion with.
std::exception_ptr backend_error(const std::string& message);

// What a call was, spelled out only when a message needs it (building the
// text for every call would cost more than a small collective).
struct Description {
  std::string what;  // "allreduce", "send to rank 3 with tag 0"
  uint64_t sequence = 0;
  std::shared_ptr<const std::string> group;
  int rank = 0;
  int size = 1;
  // "allreduce #12 of group 0 (rank 1 of 4)"
  std::string text() const;
};

class Completion {
 public:
  // `stream`: the CUDA stream a call on GPU tensors runs on. Its future is
  // then made at once, for that device, so that it is marked complete on
  // that stream (torch's CUDA-aware futures record their events there).
  explicit Completion(std::vector<at::Tensor> outputs, std::optional<c10::Stream> stream = std::nullopt);

  void succeed();
  void fail(std::exception_ptr error);
  // False when `timeout` passed first; a zero timeout returns at once.
  bool wait_for(std::chrono::milliseconds timeout);

  bool done() const;
  std::exception_ptr error() const;
  // Made on first use; complete already when the call is.
  c10::intrusive_ptr<c10::ivalue::Future> future();
  const std::vector<at::Tensor>& outputs() const { return outputs_; }
  // A call on GPU tensors: record, on its stream, that the collective's work
  // is queued (called by the job, after the collective); make `waiter` wait
  // for it (wait() does, for the caller's current stream).
  void record_on_stream();
  void block_current_stream() const;
  void set_source(int source) { source_ = source; }
  int source() const { return source_; }

 private:
  void settle(std::exception_ptr error);
  void complete(const c10::intrusive_ptr<c10::ivalue::Future>& future, const std::exception_ptr& error);

  std::vector<at::Tensor> outputs_;
  std::optional<c10::Stream> stream_;
  std::optional<c10::Event> queued_;  // recorded on stream_ after the collective
  c10::intrusive_ptr<c10::ivalue::Future> future_;
  mutable std::mutex mutex_;
  std::condition_variable done_changed_;
  bool settled_ = false;  // the outcome is known (the future, if any, is being marked)
  bool done_ = false;     // ... and marked: wait() may return
  std::exception_ptr error_;
  int source_ = -1;
};

class MatexWork : public c10d::Work {
 public:
  // on_expiry runs when a wait times out, with the message it raises.
  MatexWork(int rank, c10d::OpType type, std::shared_ptr<Completion> completion, std::chrono::milliseconds timeout,
            Description description, std::function<void(const std::string&)> on_expiry);

  bool isCompleted() override;
  bool isSuccess() const override;
  std::exception_ptr exception() const override;
  int sourceRank() const override;
  std::vector<at::Tensor> result() override;
  // Waits at most `timeout` (zero: the collective's own timeout); raises
  // DistBackendError on failure or expiry.
  bool wait(std::chrono::milliseconds timeout = std::chrono::milliseconds(0)) override;
  // GPU calls: the caller's current stream waits for the collective.
  void synchronize() override;
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override;
  std::chrono::milliseconds getTimeout() const MATEX_OVERRIDE_FROM_TORCH_2_14 { return timeout_; }

 private:
  std::shared_ptr<Completion> completion_;
  std::chrono::milliseconds timeout_;
  Description description_;
  std::function<void(const std::string&)> on_expiry_;
};

}  // namespace matex_torch
