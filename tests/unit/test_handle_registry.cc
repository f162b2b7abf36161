// Unit tests of the C API's handle registry (api/handle_registry.h): live,
// released and unknown handles are told apart, a released handle never comes
// back, and an object stays alive while a user still holds it.
#include <gtest/gtest.h>

#include <memory>
#include <set>
#include <thread>
#include <vector>

#include "api/handle_registry.h"

namespace matexcomm::capi {
namespace {

struct TestHandleTag;
using Handle = TestHandleTag*;
using Registry = HandleRegistry<Handle, int, 5>;

TEST(HandleRegistry, LiveReleasedAndUnknownAreToldApart) {
  Registry& registry = Registry::instance();
  const Handle a = registry.add(std::make_shared<int>(7));
  const Handle b = registry.add(std::make_shared<int>(8));
  EXPECT_NE(a, b);
  Registry::State state = Registry::State::kUnknown;
  ASSERT_NE(registry.find(a, &state), nullptr);
  EXPECT_EQ(*registry.find(a), 7);
  EXPECT_EQ(state, Registry::State::kLive);
  state = Registry::State::kUnknown;
  EXPECT_EQ(registry.find_unowned(a, &state), registry.find(a).get());  // the same object, no share taken
  EXPECT_EQ(state, Registry::State::kLive);
  EXPECT_EQ(registry.find(a).use_count(), 2);  // the registry's and this temporary's

  const std::shared_ptr<int> released = registry.release(a);
  ASSERT_NE(released, nullptr);
  EXPECT_EQ(*released, 7);
  EXPECT_EQ(registry.find(a, &state), nullptr);
  EXPECT_EQ(state, Registry::State::kReleased);
  state = Registry::State::kLive;
  EXPECT_EQ(registry.find_unowned(a, &state), nullptr);
  EXPECT_EQ(state, Registry::State::kReleased);
  EXPECT_EQ(registry.find_unowned(reinterpret_cast<Handle>(1), &state), nullptr);
  EXPECT_EQ(state, Registry::State::kUnknown);
  EXPECT_EQ(registry.release(a), nullptr);  // twice: nothing to give back
  EXPECT_EQ(*registry.find(b), 8);          // the other stays

  int storage[4] = {0};
  EXPECT_EQ(registry.find(reinterpret_cast<Handle>(storage), &state), nullptr);  // a forged pointer
  EXPECT_EQ(state, Registry::State::kUnknown);
  EXPECT_EQ(registry.find(nullptr, &state), nullptr);
  EXPECT_EQ(state, Registry::State::kUnknown);
  EXPECT_EQ(registry.find(reinterpret_cast<Handle>(1), &state), nullptr);  // a small number made up
  EXPECT_EQ(state, Registry::State::kUnknown);
  registry.release(b);
}

TEST(HandleRegistry, HandlesAreNeverReused) {
  Registry& registry = Registry::instance();
  std::set<Handle> seen;
  for (int i = 0; i < 1000; ++i) {
    const Handle h = registry.add(std::make_shared<int>(i));
    EXPECT_TRUE(seen.insert(h).second) << "handle " << h << " came back";
    registry.release(h);
  }
}

TEST(HandleRegistry, AnObjectOutlivesItsReleaseWhileHeld) {
  Registry& registry = Registry::instance();
  const Handle h = registry.add(std::make_shared<int>(42));
  const std::shared_ptr<int> held = registry.find(h);
  registry.release(h);
  EXPECT_EQ(*held, 42);
  EXPECT_EQ(held.use_count(), 1);  // the registry let go
}

TEST(HandleRegistry, ThreadsAddFindAndReleaseTogether) {
  Registry& registry = Registry::instance();
  constexpr int kThreads = 4;
  constexpr int kPerThread = 500;
  std::vector<std::thread> threads;
  std::vector<int> wrong(kThreads, 0);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        const int value = t * kPerThread + i;
        const Handle h = registry.add(std::make_shared<int>(value));
        const std::shared_ptr<int> found = registry.find(h);
        if (found == nullptr || *found != value) ++wrong[t];
        if (registry.release(h) == nullptr) ++wrong[t];
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(wrong[t], 0) << "thread " << t;
}

TEST(HandleRegistry, KindsNeverAliasEachOther) {
  using Other = HandleRegistry<Handle, int, 6>;
  const Handle mine = Registry::instance().add(std::make_shared<int>(1));
  const Handle theirs = Other::instance().add(std::make_shared<int>(2));
  EXPECT_NE(mine, theirs);
  Registry::State state = Registry::State::kLive;
  EXPECT_EQ(Registry::instance().find(theirs, &state), nullptr);
  EXPECT_EQ(state, Registry::State::kUnknown);
  Other::State other_state = Other::State::kLive;
  EXPECT_EQ(Other::instance().find(mine, &other_state), nullptr);
  EXPECT_EQ(other_state, Other::State::kUnknown);
  EXPECT_EQ(Other::instance().release(mine), nullptr);  // the other kind's release leaves it alone
  EXPECT_EQ(*Registry::instance().find(mine), 1);
  Registry::instance().release(mine);
  Other::instance().release(theirs);
}

}  // namespace
}  // namespace matexcomm::capi
