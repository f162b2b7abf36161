#include "core/backoff.h"

#include <sched.h>
#include <time.h>

#include <algorithm>

namespace matexcomm {

namespace {
constexpr long kMaxSleepNanos = 50 * 1000;

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}
}  // namespace

Backoff::Backoff(double timeout_seconds, BackoffPace pace)
    : pace_(pace),
      timeout_(std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_seconds))) {}

void Backoff::extend() {
  if (started_) deadline_ = now_ + timeout_;  // before the first pause the whole timeout is still ahead
}

double Backoff::elapsed_seconds() const {
  return started_ ? std::chrono::duration<double>(now_ - start_).count() : 0.0;
}

bool Backoff::pause() {
  if (!started_) {
    start_ = now_ = Clock::now();
    deadline_ = start_ + timeout_;
    started_ = true;
  }
  ++rounds_;
  if (rounds_ < pace_.spin_rounds) {
    cpu_relax();
    if (rounds_ % 256 != 0) return true;  // read the clock now and then only
  } else if (!pace_.sleep_after_yields || rounds_ < pace_.spin_rounds + pace_.yield_rounds) {
    sched_yield();
  } else {
    long exponent = std::min<long>(rounds_ - pace_.spin_rounds - pace_.yield_rounds, 10);
    long nanos = std::min<long>(1000L << exponent, kMaxSleepNanos);
    struct timespec ts = {0, nanos};
    nanosleep(&ts, nullptr);
  }
  now_ = Clock::now();
  return now_ < deadline_;
}

}  // namespace matexcomm
