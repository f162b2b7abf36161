// test_rail_trials.cc - RailTrials: the first calls of each size group
// alternate the two rail algorithms, the agreed figures settle the faster,
// the trials come back every cycle, and groups are powers of two.
#include <gtest/gtest.h>

#include <array>
#include <vector>

#include "algorithms/rail_trials.h"

namespace matexcomm {
namespace {

constexpr int kTrialCalls = 2 * RailTrials::kTrialsEach;

// Runs a group's trial phase: copies take `copies_seconds`, single copies
// `single_seconds`; returns how many record() calls asked for agreement.
int run_trials(RailTrials& trials, size_t bytes, double copies_seconds, double single_seconds) {
  int asked = 0;
  for (int call = 0; call < kTrialCalls; ++call) {
    const RailPick pick = trials.pick(bytes);
    EXPECT_EQ(pick, call % 2 == 0 ? RailPick::kCopies : RailPick::kSingleCopy) << "trial call " << call;
    asked += trials.record(bytes, pick, pick == RailPick::kCopies ? copies_seconds : single_seconds);
  }
  return asked;
}

TEST(RailTrials, TheFirstCallsAlternateAndTheFasterSettles) {
  RailTrials trials;
  const size_t bytes = 1 << 20;
  EXPECT_FALSE(trials.decided(bytes).has_value());
  EXPECT_EQ(run_trials(trials, bytes, 2e-3, 1e-3), 1);  // only the last trial asks
  const std::array<double, 2> mine = trials.trial_figures(bytes);
  EXPECT_DOUBLE_EQ(mine[0], 2e-3 / bytes);
  EXPECT_DOUBLE_EQ(mine[1], 1e-3 / bytes);
  trials.settle(bytes, mine);
  ASSERT_TRUE(trials.decided(bytes).has_value());
  EXPECT_EQ(*trials.decided(bytes), RailPick::kSingleCopy);
  for (int call = 0; call < 10; ++call) {
    EXPECT_EQ(trials.pick(bytes), RailPick::kSingleCopy);
    EXPECT_FALSE(trials.record(bytes, RailPick::kSingleCopy, 1e-3));
  }
}

TEST(RailTrials, TheAgreedFiguresDecideNotThisRanks) {
  RailTrials trials;
  const size_t bytes = 3 << 20;
  run_trials(trials, bytes, 1e-3, 2e-3);  // here copies won
  trials.settle(bytes, {4e-9, 3e-9});      // the slowest rank's say single copies
  EXPECT_EQ(*trials.decided(bytes), RailPick::kSingleCopy);
  EXPECT_NE(trials.explain().find("rs_ar_ag_cma"), std::string::npos) << trials.explain();
}

TEST(RailTrials, TheFastestTrialCountsAndTiesGoToCopies) {
  RailTrials trials;
  const size_t bytes = 1000;
  // One slow (preempted) call of each does not decide: the fastest counts.
  static_assert(RailTrials::kTrialsEach == 2, "the figures below are two per algorithm");
  const std::vector<double> copies = {9e-3, 1e-3}, single = {1e-3, 9e-3};
  for (int call = 0; call < kTrialCalls; ++call) {
    const RailPick pick = trials.pick(bytes);
    trials.record(bytes, pick, pick == RailPick::kCopies ? copies[call / 2] : single[call / 2]);
  }
  trials.settle(bytes, trials.trial_figures(bytes));
  EXPECT_EQ(*trials.decided(bytes), RailPick::kCopies);  // 1e-3 each: a tie
}

TEST(RailTrials, GroupsArePowersOfTwo) {
  RailTrials trials;
  run_trials(trials, 1 << 20, 2e-3, 1e-3);
  trials.settle(1 << 20, trials.trial_figures(1 << 20));
  EXPECT_TRUE(trials.decided((2 << 20) - 1).has_value());  // the same group
  EXPECT_FALSE(trials.decided(2 << 20).has_value());       // the next one
  EXPECT_FALSE(trials.decided((1 << 20) - 1).has_value());  // the one before
  EXPECT_EQ(trials.pick(2 << 20), RailPick::kCopies);       // its own first trial
}

TEST(RailTrials, TheTrialsComeBackEveryCycle) {
  RailTrials trials;
  const size_t bytes = 1 << 16;
  run_trials(trials, bytes, 2e-3, 1e-3);
  trials.settle(bytes, trials.trial_figures(bytes));
  for (uint64_t call = kTrialCalls; call < RailTrials::kCallsPerCycle; ++call) {
    ASSERT_EQ(trials.pick(bytes), RailPick::kSingleCopy) << call;
    ASSERT_FALSE(trials.record(bytes, RailPick::kSingleCopy, 1e-3));
  }
  // A new cycle: the placement may have changed, so both run again, and the
  // old choice holds until the new figures settle.
  EXPECT_EQ(run_trials(trials, bytes, 1e-3, 2e-3), 1);
  EXPECT_EQ(*trials.decided(bytes), RailPick::kSingleCopy);
  trials.settle(bytes, trials.trial_figures(bytes));
  EXPECT_EQ(*trials.decided(bytes), RailPick::kCopies);
}

}  // namespace
}  // namespace matexcomm
