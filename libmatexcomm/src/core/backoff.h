// backoff.h - the one way libmatexcomm waits for a peer.
//
// A short spin with a CPU pause hint, then sched_yield, then sleeps that grow
// to 100 us, so that oversubscribed jobs (4 ranks on 2 cores) still progress.
// Every wait is bounded: after `timeout_seconds` the caller is told to give up
// and must raise MATEX_ERR_TIMEOUT naming the peer it was waiting for.
#pragma once

#include <chrono>

namespace matexcomm {

class Backoff {
 public:
  explicit Backoff(double timeout_seconds);
  // Waits a little. Returns false once the deadline has passed.
  bool pause();
  double elapsed_seconds() const;
  // Restarts the timeout from now (the peer showed it is alive); keeps the pace.
  void extend();

 private:
  using Clock = std::chrono::steady_clock;
  Clock::duration timeout_;
  Clock::time_point start_;
  Clock::time_point deadline_;
  unsigned rounds_ = 0;
};

// Polls `ready()` under a Backoff. Returns true when ready, false on timeout.
template <class Ready>
bool wait_for(Ready&& ready, double timeout_seconds) {
  if (ready()) return true;
  Backoff backoff(timeout_seconds);
  while (!ready()) {
    if (!backoff.pause()) return ready();
  }
  return true;
}

}  // namespace matexcomm
