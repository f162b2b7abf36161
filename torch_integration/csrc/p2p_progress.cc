#include "p2p_progress.h"

#include <c10/util/Exception.h>

#include <algorithm>
#include <chrono>

namespace matex_torch {

P2pProgress::~P2pProgress() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  if (thread_.joinable()) thread_.join();
  for (Pending& pending : pending_) {
    matex_p2p_free(&pending.request);
    // A send still pending is left to MPI, which may yet read its buffer:
    // keep the buffer (held by on_success) alive for good.
    new std::function<void()>(std::move(pending.on_success));
    pending.completion->fail(
        backend_error("matex: " + pending.description + " was still pending when its process group closed"));
  }
}

void P2pProgress::watch(matex_p2p_t request, std::shared_ptr<Completion> completion, std::string description,
                        std::function<void()> on_success) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    pending_.push_back({request, std::move(completion), std::move(description), std::move(on_success)});
    if (!thread_.joinable()) thread_ = std::thread([this] { loop(); });
  }
  changed_.notify_all();
}

bool P2pProgress::progress(Pending& pending) {
  int done = 0;
  matex_status_t status = matex_p2p_test(pending.request, &done);
  if (!done && status == MATEX_SUCCESS) return false;
  if (status == MATEX_SUCCESS) {
    int source = -1;
    size_t count = 0;
    if (matex_p2p_status(pending.request, &source, &count) == MATEX_SUCCESS) pending.completion->set_source(source);
  }
  const std::string message = status == MATEX_SUCCESS ? "" : matex_last_error();
  matex_p2p_free(&pending.request);
  if (status != MATEX_SUCCESS) {
    pending.completion->fail(backend_error("matex: " + pending.description + " failed: " + message));
    return true;
  }
  try {
    if (pending.on_success) pending.on_success();
    pending.completion->succeed();
  } catch (...) {
    pending.completion->fail(std::current_exception());
  }
  return true;
}

void P2pProgress::loop() {
  // Back off while nothing completes: spin-yield first, then sleep longer
  // and longer (up to 1 ms), so that waiting ranks leave shared cores free.
  int idle_rounds = 0;
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    changed_.wait(lock, [this] { return stopping_ || !pending_.empty(); });
    if (stopping_) return;
    std::vector<Pending> batch;
    batch.swap(pending_);
    lock.unlock();
    bool moved = false;
    std::vector<Pending> still;
    for (Pending& pending : batch) {
      if (progress(pending)) {
        moved = true;
      } else {
        still.push_back(std::move(pending));
      }
    }
    idle_rounds = moved ? 0 : idle_rounds + 1;
    if (!still.empty() && idle_rounds > 0 && idle_rounds < 32) std::this_thread::yield();
    lock.lock();
    if (!still.empty() && idle_rounds >= 32 && pending_.empty() && !stopping_) {
      // A new request wakes this at once (and restarts the back-off).
      if (changed_.wait_for(lock, std::chrono::microseconds(std::min(1000, 20 * (idle_rounds - 31))),
                            [this] { return stopping_ || !pending_.empty(); })) {
        idle_rounds = 0;
      }
    }
    // Keep the order requests were posted in: older ones first.
    still.insert(still.end(), std::make_move_iterator(pending_.begin()), std::make_move_iterator(pending_.end()));
    pending_.swap(still);
  }
}

}  // namespace matex_torch
