#include "group_worker.h"

namespace matex_torch {

GroupWorker::GroupWorker() : thread_([this] { loop(); }) { thread_id_ = thread_.get_id(); }

GroupWorker::~GroupWorker() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  if (abandoned_) {
    thread_.detach();
  } else {
    thread_.join();
  }
}

bool GroupWorker::idle() {
  std::lock_guard<std::mutex> lock(mutex_);
  return queue_.empty() && !busy_;
}

bool GroupWorker::wait_idle(std::chrono::milliseconds limit) {
  const auto until = Clock::now() + limit;
  while (!idle()) {
    if (Clock::now() >= until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

void GroupWorker::abandon() {
  std::lock_guard<std::mutex> lock(mutex_);
  abandoned_ = true;
}

void GroupWorker::submit(std::function<void()> job) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back(std::move(job));
    queued_.fetch_add(1, std::memory_order_release);
  }
  changed_.notify_one();
}

bool GroupWorker::try_run_inline(const std::function<void()>& job, Clock::time_point deadline,
                                 std::function<void()> on_expiry) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (!queue_.empty() || busy_) return false;
  busy_ = true;
  inline_ = true;
  inline_deadline_ = deadline;
  inline_expiry_ = std::move(on_expiry);
  lock.unlock();
  job();
  lock.lock();
  busy_ = false;
  inline_ = false;
  inline_expiry_ = nullptr;
  const bool waiting = !queue_.empty();  // queued by another thread meanwhile
  lock.unlock();
  if (waiting) changed_.notify_one();
  return true;
}

bool GroupWorker::stay_awake() {
  const auto until = Clock::now() + kStayAwake;
  do {
    if (queued_.load(std::memory_order_acquire) > 0) return true;
    std::this_thread::yield();
  } while (Clock::now() < until);
  return false;
}

void GroupWorker::watch_inline(std::unique_lock<std::mutex>& lock) {
  if (!inline_ || !inline_expiry_ || Clock::now() < inline_deadline_) return;
  std::function<void()> expiry = std::move(inline_expiry_);
  inline_expiry_ = nullptr;
  lock.unlock();
  expiry();
  lock.lock();
}

void GroupWorker::loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  bool just_worked = false;
  for (;;) {
    if (just_worked && queue_.empty()) {
      lock.unlock();
      stay_awake();
      lock.lock();
    }
    just_worked = false;
    changed_.wait_for(lock, kWatchPeriod, [this] { return !busy_ && (stopping_ || !queue_.empty()); });
    watch_inline(lock);
    if (busy_ || queue_.empty()) {
      if (stopping_ && !busy_) return;
      continue;
    }
    std::function<void()> job = std::move(queue_.front());
    queue_.pop_front();
    queued_.fetch_sub(1, std::memory_order_relaxed);
    busy_ = true;
    lock.unlock();
    job();
    lock.lock();
    busy_ = false;
    just_worked = true;
  }
}

}  // namespace matex_torch
