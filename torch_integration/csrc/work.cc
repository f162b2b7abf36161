#include "work.h"

#include <ATen/core/jit_type.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <c10/util/Exception.h>

#include <thread>

namespace matex_torch {

std::exception_ptr backend_error(const std::string& message) {
  try {
    C10_THROW_ERROR(DistBackendError, message);
  } catch (...) {
    return std::current_exception();
  }
}

std::string Description::text() const {
  return what + " #" + std::to_string(sequence) + " of group " + (group ? *group : std::string("?")) + " (rank " +
         std::to_string(rank) + " of " + std::to_string(size) + ")";
}

Completion::Completion(std::vector<at::Tensor> outputs, std::optional<c10::Stream> stream)
    : outputs_(std::move(outputs)), stream_(stream) {
  if (stream_) {
    future_ = c10::make_intrusive<c10::ivalue::Future>(c10::ListType::create(c10::TensorType::get()),
                                                       std::vector<c10::Device>{stream_->device()});
  }
}

void Completion::record_on_stream() {
  if (!stream_) return;
  c10::Event event(stream_->device_type());
  event.record(*stream_);
  std::lock_guard<std::mutex> lock(mutex_);
  queued_.emplace(std::move(event));
}

void Completion::block_current_stream() const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!queued_) return;
  const c10::Stream current =
      c10::impl::getDeviceGuardImpl(queued_->device_type())->getStream(queued_->device());
  queued_->block(current);
}

void Completion::succeed() { settle(nullptr); }

void Completion::fail(std::exception_ptr error) { settle(std::move(error)); }

void Completion::complete(const c10::intrusive_ptr<c10::ivalue::Future>& future, const std::exception_ptr& error) {
  if (error) {
    future->setError(error);
  } else {
    future->markCompleted(c10::IValue(outputs_));
  }
}

void Completion::settle(std::exception_ptr error) {
  c10::intrusive_ptr<c10::ivalue::Future> future;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    settled_ = true;
    error_ = error;
    future = future_;
  }
  if (future) complete(future, error);  // its callbacks run here, outside our lock
  {
    std::lock_guard<std::mutex> lock(mutex_);
    done_ = true;
  }
  done_changed_.notify_all();
}

c10::intrusive_ptr<c10::ivalue::Future> Completion::future() {
  static const c10::TypePtr kListOfTensors = c10::ListType::create(c10::TensorType::get());
  std::lock_guard<std::mutex> lock(mutex_);
  if (!future_) {
    future_ = c10::make_intrusive<c10::ivalue::Future>(kListOfTensors);
    if (settled_) complete(future_, error_);  // nobody can have added a callback yet
  }
  return future_;
}

bool Completion::wait_for(std::chrono::milliseconds timeout) {
  // A short collective is usually done within microseconds: look a few
  // times, yielding the core, before going to sleep on the condition.
  for (int spin = 0; spin < 64; ++spin) {
    if (done()) return true;
    std::this_thread::yield();
  }
  std::unique_lock<std::mutex> lock(mutex_);
  return done_changed_.wait_for(lock, timeout, [this] { return done_; });
}

bool Completion::done() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return done_;
}

std::exception_ptr Completion::error() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return error_;
}

MatexWork::MatexWork(int rank, c10d::OpType type, std::shared_ptr<Completion> completion,
                     std::chrono::milliseconds timeout, Description description,
                     std::function<void(const std::string&)> on_expiry)
    : c10d::Work(rank, type),
      completion_(std::move(completion)),
      timeout_(timeout),
      description_(std::move(description)),
      on_expiry_(std::move(on_expiry)) {}

bool MatexWork::isCompleted() { return completion_->done(); }

bool MatexWork::isSuccess() const { return completion_->done() && !completion_->error(); }

std::exception_ptr MatexWork::exception() const { return completion_->error(); }

int MatexWork::sourceRank() const {
  TORCH_CHECK(completion_->source() >= 0, "matex: sourceRank() is only known for a completed receive (",
              description_.text(), ")");
  return completion_->source();
}

std::vector<at::Tensor> MatexWork::result() { return completion_->outputs(); }

bool MatexWork::wait(std::chrono::milliseconds timeout) {
  const std::chrono::milliseconds limit = timeout > std::chrono::milliseconds::zero() ? timeout : timeout_;
  if (!completion_->wait_for(limit)) {
    const std::string message = "matex: " + description_.text() + " did not complete within " +
                                std::to_string(limit.count() / 1000.0) +
                                " s; a rank may have skipped this call, called another collective, or died. The "
                                "process group cannot be used any more";
    if (on_expiry_) on_expiry_(message);
    C10_THROW_ERROR(DistBackendError, message);
  }
  if (std::exception_ptr error = completion_->error()) std::rethrow_exception(error);
  completion_->block_current_stream();
  return true;
}

void MatexWork::synchronize() { completion_->block_current_stream(); }

c10::intrusive_ptr<c10::ivalue::Future> MatexWork::getFuture() { return completion_->future(); }

}  // namespace matex_torch
