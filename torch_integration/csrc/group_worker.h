// group_worker.h - runs one process group's collectives, one at a time, in
// the order they were issued (c10d issues them in the same order on every
// rank, so every rank runs them in the same order).
//
// Asynchronous calls are queued to the group's thread, so that the caller
// (DDP's backward pass) goes on computing while they run; their Work's wait()
// gives up after the timeout. A synchronous call with nothing queued or
// running runs inline on the caller's thread: a hand-over between threads
// would cost more than a small collective. The group's thread then watches
// the clock (it wakes every kWatchPeriod) and calls the expiry handler if the
// inline call runs past its deadline. After each job the thread stays awake,
// polling and yielding its core, for kStayAwake before it sleeps, so that a
// burst of asynchronous calls is picked up at once.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace matex_torch {

class GroupWorker {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr std::chrono::microseconds kStayAwake{200};
  static constexpr std::chrono::milliseconds kWatchPeriod{100};

  GroupWorker();
  // Runs what is queued, then stops; see abandon().
  ~GroupWorker();
  GroupWorker(const GroupWorker&) = delete;
  GroupWorker& operator=(const GroupWorker&) = delete;

  // Jobs must not throw (they report through their Completion).
  void submit(std::function<void()> job);
  // Runs job on the caller's thread if nothing is queued or running (else
  // returns false and runs nothing). on_expiry runs on the group's thread,
  // once, if job is still running at deadline.
  bool try_run_inline(const std::function<void()>& job, Clock::time_point deadline,
                      std::function<void()> on_expiry);
  // True when no job is queued or running.
  bool idle();
  // Waits up to `limit` for idle(); returns it.
  bool wait_idle(std::chrono::milliseconds limit);
  // True on the group's own thread (inside a job or a future's callback).
  bool on_worker_thread() const { return std::this_thread::get_id() == thread_id_; }
  // The thread is stuck in a collective that will never finish (a wait timed
  // out): the destructor leaves it behind instead of joining it.
  void abandon();

 private:
  void loop();
  // Polls for new work for kStayAwake; true when some arrived.
  bool stay_awake();
  // Called with mutex_ held: runs the inline call's expiry handler if due.
  void watch_inline(std::unique_lock<std::mutex>& lock);

  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::function<void()>> queue_;
  std::atomic<size_t> queued_{0};
  bool busy_ = false;        // a job runs, here or inline
  bool inline_ = false;      // ... on the caller's thread
  Clock::time_point inline_deadline_;
  std::function<void()> inline_expiry_;
  bool stopping_ = false;
  bool abandoned_ = false;
  std::thread::id thread_id_;
  std::thread thread_;
};

}  // namespace matex_torch
