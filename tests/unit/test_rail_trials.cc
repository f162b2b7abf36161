// test_rail_trials.cc - RailTrials: the first calls of each size group
// alternate the two rail algorithms, the agreed figures settle the faster
// (by a margin over the size rule's pick), the trials come back every cycle
// with fresh figures, and there are four groups per power of two.
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
  trials.settle(bytes, mine, RailPick::kCopies);
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
  trials.settle(bytes, {4e-9, 3e-9}, RailPick::kCopies);  // the slowest rank's say single copies
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
  trials.settle(bytes, trials.trial_figures(bytes), RailPick::kCopies);
  EXPECT_EQ(*trials.decided(bytes), RailPick::kCopies);  // 1e-3 each: a tie keeps the rule's pick
}

TEST(RailTrials, TheOtherPickMustWinByTheMargin) {
  const size_t bytes = 1 << 20;
  const double rule = 1e-9;
  for (RailPick by_rule : {RailPick::kCopies, RailPick::kSingleCopy}) {
    const int kept = static_cast<int>(by_rule);
    std::array<double, 2> figures{};
    figures[kept] = rule;
    figures[1 - kept] = rule * (1 - RailTrials::kMargin / 2);  // faster, but within the margin
    RailTrials within;
    within.settle(bytes, figures, by_rule);
    EXPECT_EQ(*within.decided(bytes), by_rule);
    figures[1 - kept] = rule * (1 - 2 * RailTrials::kMargin);
    RailTrials beyond;
    beyond.settle(bytes, figures, by_rule);
    EXPECT_NE(*beyond.decided(bytes), by_rule);
  }
}

TEST(RailTrials, FourGroupsPerPowerOfTwo) {
  RailTrials trials;
  const size_t mib = 1 << 20;
  run_trials(trials, mib, 2e-3, 1e-3);
  trials.settle(mib, trials.trial_figures(mib), RailPick::kCopies);
  EXPECT_TRUE(trials.decided(mib + mib / 4 - 1).has_value());  // the same group: [1 MiB, 1.25 MiB)
  EXPECT_FALSE(trials.decided(mib + mib / 4).has_value());     // the next one
  EXPECT_FALSE(trials.decided(mib - 1).has_value());           // the one before
  EXPECT_FALSE(trials.decided(2 * mib).has_value());
  EXPECT_EQ(trials.pick(mib + mib / 4), RailPick::kCopies);     // its own first trial
  EXPECT_NE(trials.explain().find("[1 MiB, 1.25 MiB)"), std::string::npos) << trials.explain();
  // Below 8 B every size is a group of its own.
  RailTrials small;
  for (size_t bytes : {size_t{3}, size_t{4}, size_t{7}}) {
    run_trials(small, bytes, 1e-3, 2e-3);
    small.settle(bytes, small.trial_figures(bytes), RailPick::kSingleCopy);
  }
  const std::string text = small.explain();
  for (const char* group : {"[3 B, 4 B)", "[4 B, 5 B)", "[7 B, 8 B)"})
    EXPECT_NE(text.find(group), std::string::npos) << group << " in\n" << text;
}

TEST(RailTrials, TheTrialsComeBackEveryCycle) {
  RailTrials trials;
  const size_t bytes = 1 << 16;
  run_trials(trials, bytes, 2e-3, 1e-3);
  trials.settle(bytes, trials.trial_figures(bytes), RailPick::kCopies);
  for (uint64_t call = kTrialCalls; call < RailTrials::kCallsPerCycle; ++call) {
    ASSERT_EQ(trials.pick(bytes), RailPick::kSingleCopy) << call;
    ASSERT_FALSE(trials.record(bytes, RailPick::kSingleCopy, 1e-3));
  }
  // A new cycle: the placement may have changed, so both run again, and the
  // old choice holds until the new figures settle. Only the new figures
  // count: with the old ones kept, single copies (1e-3) would win again.
  EXPECT_EQ(run_trials(trials, bytes, 1.5e-3, 3e-3), 1);
  EXPECT_EQ(*trials.decided(bytes), RailPick::kSingleCopy);
  const std::array<double, 2> fresh = trials.trial_figures(bytes);
  EXPECT_DOUBLE_EQ(fresh[1], 3e-3 / bytes);
  trials.settle(bytes, fresh, RailPick::kCopies);
  EXPECT_EQ(*trials.decided(bytes), RailPick::kCopies);
}

}  // namespace
}  // namespace matexcomm
