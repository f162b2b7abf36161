// Unit tests of the bounded wait: it returns when the condition holds and
// gives up (rather than hanging) when it never does. No timing assertions.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "core/backoff.h"

namespace matexcomm {
namespace {

TEST(Backoff, ReturnsOnceReady) {
  int polls = 0;
  EXPECT_TRUE(wait_for([&] { return ++polls >= 1000; }, 60.0));
  EXPECT_EQ(polls, 1000);
}

TEST(Backoff, GivesUpAfterTheTimeout) {
  EXPECT_FALSE(wait_for([] { return false; }, 0.05));
}

TEST(Backoff, SeesAnotherThreadsStore) {
  std::atomic<bool> flag{false};
  std::thread setter([&] { flag.store(true, std::memory_order_release); });
  EXPECT_TRUE(wait_for([&] { return flag.load(std::memory_order_acquire); }, 60.0));
  setter.join();
}

}  // namespace
}  // namespace matexcomm
