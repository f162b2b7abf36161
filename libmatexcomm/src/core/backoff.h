// backoff.h - the one way libmatexcomm waits for a peer.
//
// A short spin with a CPU pause hint, then sched_yield, then (when the cores
// are shared) sleeps that grow to 50 us, so that oversubscribed jobs (4 ranks
// on 2 cores) still progress. Every wait is bounded: after `timeout_seconds`
// the caller is told to give up and must raise MATEX_ERR_TIMEOUT naming the
// peer it was waiting for. The clock is read inside pause() only, and not on
// every spin, so a waiting loop stays cheap; a wait that is over before its
// first pause() never reads it. Each spin is a single CPU pause (tens to a
// hundred and more cycles), so a waiter notices a peer's flag soon after it
// lands: at 0.3 to 0.5 us per tiny collective, every spin counts.
#pragma once

#include <chrono>

namespace matexcomm {

// How patiently to wait: ranks that each have a core spin longer and never
// sleep; oversubscribed ranks yield early and then sleep, so the rank they
// wait for gets the core.
struct BackoffPace {
  unsigned spin_rounds;
  unsigned yield_rounds;
  bool sleep_after_yields;
  static BackoffPace for_dedicated_cores() { return {2048, ~0u, false}; }
  static BackoffPace for_shared_cores() { return {32, 1024, true}; }
};

class Backoff {
 public:
  Backoff(double timeout_seconds, BackoffPace pace);
  // Waits a little. Returns false once the deadline has passed.
  bool pause();
  // Seconds since the first pause(), as of the last clock reading.
  double elapsed_seconds() const;
  // Restarts the timeout from the last clock reading (the peer showed it is
  // alive); keeps the pace.
  void extend();

 private:
  using Clock = std::chrono::steady_clock;
  BackoffPace pace_;
  Clock::duration timeout_;
  Clock::time_point start_;
  Clock::time_point now_;  // the last clock reading
  Clock::time_point deadline_;
  unsigned rounds_ = 0;
  bool started_ = false;  // the clock has been read: the wait is on
};

// Waits with backoff until `done()`, with no timeout: for waits that must not
// add one where the collective itself has none (a rank may spend an hour
// saving a checkpoint before a barrier). Once `warn_seconds` have passed it
// calls `warn(elapsed seconds)`, once.
template <class Done, class Warn>
void wait_without_timeout(Done done, BackoffPace pace, double warn_seconds, Warn warn) {
  Backoff backoff(1e9, pace);
  bool warned = false;
  while (!done()) {
    backoff.pause();
    if (!warned && backoff.elapsed_seconds() > warn_seconds) {
      warned = true;
      warn(backoff.elapsed_seconds());
    }
  }
}

}  // namespace matexcomm
