#include "core/backoff.h"

#include <sched.h>
#include <time.h>

#include <algorithm>

namespace matexcomm {

namespace {
constexpr unsigned kSpinRounds = 64;
constexpr unsigned kYieldRounds = 256;
constexpr long kMaxSleepNanos = 100 * 1000;

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}
}  // namespace

Backoff::Backoff(double timeout_seconds)
    : timeout_(std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_seconds))),
      start_(Clock::now()),
      deadline_(start_ + timeout_) {}

void Backoff::extend() { deadline_ = Clock::now() + timeout_; }

double Backoff::elapsed_seconds() const {
  return std::chrono::duration<double>(Clock::now() - start_).count();
}

bool Backoff::pause() {
  ++rounds_;
  if (rounds_ < kSpinRounds) {
    for (int i = 0; i < 16; ++i) cpu_relax();
    return true;
  }
  if (rounds_ < kSpinRounds + kYieldRounds) {
    sched_yield();
  } else {
    long exponent = std::min<long>(rounds_ - kSpinRounds - kYieldRounds, 10);
    long nanos = std::min<long>(1000L << exponent, kMaxSleepNanos);
    struct timespec ts = {0, nanos};
    nanosleep(&ts, nullptr);
  }
  // The clock is read only once the fast spin is over.
  return Clock::now() < deadline_;
}

}  // namespace matexcomm
