// Unit tests of the bounded wait: a loop over Backoff::pause() returns when
// the condition holds and gives up (rather than hanging) when it never does;
// extend() restarts the deadline. No timing assertions.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "core/backoff.h"

namespace matexcomm {
namespace {

// The loop every waiter in the library runs: true when ready, false on timeout.
template <class Ready>
bool wait_with(Backoff& backoff, Ready&& ready) {
  while (!ready()) {
    if (!backoff.pause()) return ready();
  }
  return true;
}

class BackoffPaces : public ::testing::TestWithParam<bool> {
 protected:
  BackoffPace pace() const {
    return GetParam() ? BackoffPace::for_dedicated_cores() : BackoffPace::for_shared_cores();
  }
};

TEST_P(BackoffPaces, ReturnsOnceReady) {
  int polls = 0;
  Backoff backoff(60.0, pace());
  EXPECT_TRUE(wait_with(backoff, [&] { return ++polls >= 1000; }));
  EXPECT_EQ(polls, 1000);
}

TEST_P(BackoffPaces, GivesUpAfterTheTimeout) {
  Backoff backoff(0.05, pace());
  EXPECT_FALSE(wait_with(backoff, [] { return false; }));
  EXPECT_GT(backoff.elapsed_seconds(), 0.0);
}

TEST_P(BackoffPaces, SeesAnotherThreadsStore) {
  std::atomic<bool> flag{false};
  std::thread setter([&] { flag.store(true, std::memory_order_release); });
  Backoff backoff(60.0, pace());
  EXPECT_TRUE(wait_with(backoff, [&] { return flag.load(std::memory_order_acquire); }));
  setter.join();
}

TEST_P(BackoffPaces, ExtendKeepsAWaitAlive) {
  // A peer that keeps showing signs of life is waited for past the timeout.
  Backoff backoff(0.2, pace());
  int polls = 0;
  bool alive = true;
  while (alive) {
    if (++polls % 64 == 0) backoff.extend();
    ASSERT_TRUE(backoff.pause()) << "gave up after " << polls << " polls although extended";
    alive = backoff.elapsed_seconds() < 0.5;
  }
  EXPECT_GE(backoff.elapsed_seconds(), 0.5);
}

INSTANTIATE_TEST_SUITE_P(DedicatedAndShared, BackoffPaces, ::testing::Bool());

}  // namespace
}  // namespace matexcomm
