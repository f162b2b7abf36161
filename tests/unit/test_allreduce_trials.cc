// test_allreduce_trials.cc - AllreduceTrials: a group's first calls run every
// candidate once, the agreed figures pick the challenger, the rule's pick and
// the challenger run once more, and the challenger serves the group only if
// it was faster by the margin; the trials come back every cycle with fresh
// figures, and there are four groups per power of two.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "select/allreduce_trials.h"

namespace matexcomm {
namespace {

using Agreement = AllreduceTrials::Agreement;

const char* name_of(int algorithm) {
  static const char* names[] = {"a0", "a1", "a2", "a3", "a4"};
  return names[algorithm];
}

// Runs a group's trials with `seconds` per algorithm (by index), agreeing on
// this rank's own figures; returns the algorithms that ran, in order.
std::vector<int> run_trials(AllreduceTrials& trials, size_t bytes, const std::vector<int>& candidates,
                            const std::map<int, double>& seconds, bool in_place = false) {
  std::vector<int> ran;
  for (size_t call = 0; call < candidates.size() + 2; ++call) {
    EXPECT_TRUE(trials.trial_due(bytes)) << "call " << call;
    const int pick = trials.trial_pick(bytes, candidates);
    ran.push_back(pick);
    const Agreement due = trials.record(bytes, pick, seconds.at(pick), in_place, candidates);
    const Agreement expected = call + 1 == candidates.size() ? Agreement::kChallenger
                               : call == candidates.size() + 1 ? Agreement::kSettle
                                                                : Agreement::kNone;
    EXPECT_EQ(due, expected) << "call " << call;
    if (due == Agreement::kChallenger) trials.choose_challenger(bytes, trials.figures(bytes));
    if (due == Agreement::kSettle) trials.settle(bytes, trials.figures(bytes));
  }
  EXPECT_FALSE(trials.trial_due(bytes));
  return ran;
}

// Makes up to `calls` calls of the settled choice, `seconds` each, answering
// each watch with this rank's own figures; stops after a watch that starts
// the trials again and returns its reason (none if no watch did).
struct Served {
  int calls = 0;      // made
  int watches = 0;    // windows reviewed
  std::optional<AllreduceTrials::Restart> restart;
};
Served serve(AllreduceTrials& trials, size_t bytes, double seconds, int calls, bool in_place = false) {
  Served served;
  while (served.calls < calls) {
    EXPECT_FALSE(trials.trial_due(bytes)) << "call " << served.calls;
    const int choice = trials.decided(bytes).value_or(-1);
    const Agreement due = trials.record(bytes, choice, seconds, in_place, {});
    ++served.calls;
    if (due == Agreement::kNone) continue;
    EXPECT_EQ(due, Agreement::kWatch) << "call " << served.calls;
    ++served.watches;
    const std::vector<double> mine = trials.watch_figures(bytes);
    EXPECT_EQ(mine.size(), 3u);
    served.restart = trials.review(bytes, mine);
    if (served.restart) break;
  }
  return served;
}

// The calls of the settled choice until the next watch is due (0: the
// cycle's next trials came first).
int window_length(AllreduceTrials& trials, size_t bytes, double seconds) {
  for (int calls = 1; !trials.trial_due(bytes); ++calls) {
    if (trials.record(bytes, *trials.decided(bytes), seconds, false, {}) == Agreement::kWatch) return calls;
  }
  return 0;
}

TEST(AllreduceTrials, EachCandidateOnceThenThePickAndTheFastestOther) {
  AllreduceTrials trials;
  const size_t bytes = 1 << 20;
  EXPECT_FALSE(trials.decided(bytes).has_value());
  const std::vector<int> ran = run_trials(trials, bytes, {2, 0, 1, 3}, {{2, 3e-3}, {0, 2e-3}, {1, 1e-3}, {3, 4e-3}});
  EXPECT_EQ(ran, (std::vector<int>{2, 0, 1, 3, 1, 2}));
  ASSERT_TRUE(trials.decided(bytes).has_value());
  EXPECT_EQ(*trials.decided(bytes), 1);
  const Served served = serve(trials, bytes, 1e-3, 10);
  EXPECT_EQ(served.calls, 10);
  EXPECT_GE(served.watches, 1);  // a millisecond call: a window of kMinWatchCalls
  EXPECT_FALSE(served.restart.has_value());
  const std::string text = trials.explain(name_of);
  EXPECT_NE(text.find("[1 MiB, 1.25 MiB): a1; at 1 MiB, round one a2 3000.0 us, a0 2000.0 us, a1 1000.0 us, "
                      "a3 4000.0 us; round two a2 3000.0 us, a1 1000.0 us; the cycle cost 8010.0 us (16 calls)"),
            std::string::npos)
      << text;
}

TEST(AllreduceTrials, TheAgreedFiguresDecideNotThisRanks) {
  AllreduceTrials trials;
  const size_t bytes = 3 << 20;
  const std::vector<int> candidates{0, 1, 2};
  const std::map<int, double> here{{0, 3e-3}, {1, 1e-3}, {2, 2e-3}};  // here 1 is fastest
  for (size_t call = 0; call < candidates.size(); ++call) {
    const int pick = trials.trial_pick(bytes, candidates);
    if (trials.record(bytes, pick, here.at(pick), false, candidates) == Agreement::kChallenger) {
      EXPECT_EQ(trials.figures(bytes).size(), 3u);
      trials.choose_challenger(bytes, {3e-9, 2e-9, 1e-9});  // agreed: 2 is
    }
  }
  // Round two: the challenger first (the call behind the agreement), then the rule's pick.
  EXPECT_EQ(trials.trial_pick(bytes, candidates), 2);
  trials.record(bytes, 2, 2e-3, false, candidates);
  EXPECT_EQ(trials.trial_pick(bytes, candidates), 0);
  ASSERT_EQ(trials.record(bytes, 0, 3e-3, false, candidates), Agreement::kSettle);
  const std::vector<double> mine = trials.figures(bytes);
  ASSERT_EQ(mine.size(), 4u);  // and the last agreement's cost, for the watch, and the cycle's time
  EXPECT_DOUBLE_EQ(mine[0], 3e-3 / bytes);
  EXPECT_DOUBLE_EQ(mine[1], 2e-3 / bytes);
  EXPECT_DOUBLE_EQ(mine[3], 3e-3 + 1e-3 + 2e-3 + 2e-3 + 3e-3);
  EXPECT_ANY_THROW(trials.settle(bytes, {1e-9, 2e-9, 1e-6}));
  trials.settle(bytes, {1e-9, 2e-9, 1e-6, 11e-3});  // agreed: the rule's pick is faster
  EXPECT_EQ(*trials.decided(bytes), 0);
}

TEST(AllreduceTrials, TheFastestCallCountsAndTiesKeepTheRulesPick) {
  AllreduceTrials trials;
  const size_t bytes = 1000;
  const std::vector<int> candidates{3, 4};
  // One slow (preempted) call of each does not decide: the fastest counts.
  const std::vector<double> seconds = {9e-3, 1e-3, 9e-3, 1e-3};  // 3, 4, then round two 4, 3
  const std::vector<int> order = {3, 4, 4, 3};
  for (size_t call = 0; call < 4; ++call) {
    const int pick = trials.trial_pick(bytes, candidates);
    EXPECT_EQ(pick, order[call]);
    const Agreement due = trials.record(bytes, pick, seconds[call], false, candidates);
    if (due == Agreement::kChallenger) trials.choose_challenger(bytes, trials.figures(bytes));
    if (due == Agreement::kSettle) trials.settle(bytes, trials.figures(bytes));
  }
  EXPECT_EQ(*trials.decided(bytes), 3);  // 1e-3 each: a tie keeps the rule's pick
}

TEST(AllreduceTrials, TheChallengerMustWinByTheMargin) {
  const size_t bytes = 1 << 20;
  const double rule = 1e-3;
  for (double factor : {1 - AllreduceTrials::kMargin / 2, 1 - 2 * AllreduceTrials::kMargin}) {
    AllreduceTrials trials;
    run_trials(trials, bytes, {0, 1}, {{0, rule}, {1, rule * factor}});
    EXPECT_EQ(*trials.decided(bytes), factor > 1 - AllreduceTrials::kMargin ? 0 : 1) << factor;
  }
}

TEST(AllreduceTrials, OneCandidateServesWithoutTrials) {
  AllreduceTrials trials;
  const size_t bytes = 4096;
  EXPECT_TRUE(trials.trial_due(bytes));
  EXPECT_EQ(trials.trial_pick(bytes, {2}), 2);
  EXPECT_EQ(trials.record(bytes, 2, 1e-3, false, {2}), Agreement::kNone);
  EXPECT_FALSE(trials.trial_due(bytes));
  EXPECT_EQ(*trials.decided(bytes), 2);
  EXPECT_TRUE(trials.explain(name_of).empty());  // nothing was timed
}

TEST(AllreduceTrials, BadCandidatesAreAnInternalError) {
  AllreduceTrials trials;
  EXPECT_ANY_THROW(trials.trial_pick(64, {}));
  EXPECT_ANY_THROW(trials.trial_pick(64, {0, 1, 2, 3, 4}));
  EXPECT_ANY_THROW(trials.record(64, 1, 1e-6, false, {0, 1}));  // a cycle opens with the rule's pick
  trials.record(64, 0, 1e-6, false, {0, 1});
  EXPECT_ANY_THROW(trials.record(64, 0, 1e-6, false, {}));  // the turn is 1's
  EXPECT_ANY_THROW(trials.review(64, {1e-9, 0, 1e-6}));    // no window is open
}

// A trial call that failed (the call check raised on every rank) is not
// recorded: trial_pick alone changes nothing, and the next call runs the same turn.
TEST(AllreduceTrials, APickWithoutARecordChangesNothing) {
  AllreduceTrials trials;
  const size_t bytes = 1 << 20;
  run_trials(trials, bytes, {0, 1}, {{0, 2e-3}, {1, 1e-3}});
  EXPECT_FALSE(serve(trials, bytes, 1e-3, AllreduceTrials::kCallsPerCycle - 4).restart.has_value());
  // The next cycle's first call: {2, 0} now; it fails, so the old choice stands.
  ASSERT_TRUE(trials.trial_due(bytes));
  EXPECT_EQ(trials.trial_pick(bytes, {2}), 2);
  EXPECT_EQ(*trials.decided(bytes), 1);
  EXPECT_NE(trials.explain(name_of).find("a1"), std::string::npos);
  EXPECT_EQ(trials.trial_pick(bytes, {2, 0}), 2);
  EXPECT_EQ(trials.record(bytes, 2, 1e-3, false, {2, 0}), Agreement::kNone);
  EXPECT_EQ(trials.trial_pick(bytes, {2, 0}), 0);  // the second turn, from the recorded cycle
}

TEST(AllreduceTrials, GroupFloorIsTheGroupsSmallestSize) {
  for (size_t bytes : {size_t{1}, size_t{3}, size_t{4}, size_t{7}, size_t{8}, size_t{9}, size_t{1000}, size_t{65536},
                       size_t{65537}, size_t{81919}, size_t{81920}, size_t{1} << 40}) {
    const size_t floor = AllreduceTrials::group_floor(bytes);
    EXPECT_LE(floor, bytes) << bytes;
    EXPECT_GT(floor * 5, bytes * 4 - 4) << bytes;  // within 25 %, give or take the smallest groups
    EXPECT_EQ(AllreduceTrials::group_floor(floor), floor) << bytes;
  }
  EXPECT_EQ(AllreduceTrials::group_floor(81919), 65536u);
  EXPECT_EQ(AllreduceTrials::group_floor(81920), 81920u);
}

TEST(AllreduceTrials, FourGroupsPerPowerOfTwo) {
  AllreduceTrials trials;
  const size_t mib = 1 << 20;
  run_trials(trials, mib, {0, 1}, {{0, 2e-3}, {1, 1e-3}});
  EXPECT_TRUE(trials.decided(mib + mib / 4 - 1).has_value());  // the same group: [1 MiB, 1.25 MiB)
  EXPECT_FALSE(trials.decided(mib + mib / 4).has_value());     // the next one
  EXPECT_FALSE(trials.decided(mib - 1).has_value());           // the one before
  EXPECT_FALSE(trials.decided(2 * mib).has_value());
  EXPECT_TRUE(trials.trial_due(mib + mib / 4));                 // its own first trial
  EXPECT_NE(trials.explain(name_of).find("[1 MiB, 1.25 MiB)"), std::string::npos) << trials.explain(name_of);
  // Below 8 B every size is a group of its own.
  AllreduceTrials small;
  for (size_t bytes : {size_t{3}, size_t{4}, size_t{7}}) run_trials(small, bytes, {0, 1}, {{0, 1e-3}, {1, 2e-3}});
  const std::string text = small.explain(name_of);
  for (const char* group : {"[3 B, 4 B)", "[4 B, 5 B)", "[7 B, 8 B)"})
    EXPECT_NE(text.find(group), std::string::npos) << group << " in\n" << text;
}

TEST(AllreduceTrials, TheTrialsComeBackEveryCycle) {
  AllreduceTrials trials;
  const size_t bytes = 1 << 16;
  run_trials(trials, bytes, {0, 1, 2}, {{0, 2e-3}, {1, 1e-3}, {2, 3e-3}});
  EXPECT_EQ(*trials.decided(bytes), 1);
  const Served served = serve(trials, bytes, 1e-3, AllreduceTrials::kCallsPerCycle - 5);
  EXPECT_FALSE(served.restart.has_value());
  // A new cycle: the placement may have changed, so every candidate runs
  // again, and the old choice holds until the new figures settle. Only the
  // new figures count: with the old ones kept, 1 (1e-3) would win again.
  EXPECT_TRUE(trials.trial_due(bytes));
  const std::vector<int> ran = run_trials(trials, bytes, {0, 1, 2}, {{0, 1.5e-3}, {1, 3e-3}, {2, 2e-3}});
  EXPECT_EQ(ran, (std::vector<int>{0, 1, 2, 2, 0}));
  EXPECT_EQ(*trials.decided(bytes), 0);
}

// The watch: after a group settles, windows whose fastest call is kDrift
// off the choice's figure, either way, start the trials again at the next
// call once, in a row, they were off by as much time as the trials cost
// over the choice; smaller changes do not. The first window after a settle
// counts only calls slower than the trials' (a group's first calls run
// cold) and then gives the figure.
TEST(AllreduceTrials, TheWatchStartsTheTrialsAgainAfterADrift) {
  const size_t bytes = 1 << 22;
  // The trials below: 2, 1, then 1, 2 ms, where the choice would take 4 x 1 ms; two agreements.
  const double cost = (2e-3 + 1e-3 + 1e-3 + 2e-3 - 4e-3) + 2 * AllreduceTrials::kFirstAgreementSeconds;
  const double window = static_cast<double>(AllreduceTrials::kMinWatchCalls);  // a millisecond call
  for (double factor : {3.0, 1.6, 1 / 1.6, 1.4, 1 / 1.4}) {
    AllreduceTrials trials;
    run_trials(trials, bytes, {0, 1}, {{0, 2e-3}, {1, 1e-3}});
    ASSERT_EQ(*trials.decided(bytes), 1);
    const Served first = serve(trials, bytes, 1e-3, 2);  // the first window: as the trials
    ASSERT_FALSE(first.restart.has_value());
    ASSERT_EQ(first.watches, 1);
    const Served served = serve(trials, bytes, 1e-3 * factor, 40);
    const bool drifted = factor > AllreduceTrials::kDrift || factor < 1 / AllreduceTrials::kDrift;
    ASSERT_EQ(served.restart.has_value(), drifted) << factor;
    if (!drifted) {
      EXPECT_EQ(served.calls, 40) << factor;
      EXPECT_GE(served.watches, 2) << factor;
      continue;
    }
    EXPECT_TRUE(served.restart->drift) << factor;
    EXPECT_FALSE(served.restart->placement) << factor;
    EXPECT_DOUBLE_EQ(served.restart->ratio, factor);
    const int windows = static_cast<int>(std::ceil(cost / (window * std::abs(factor - 1) * 1e-3)));
    EXPECT_EQ(served.calls, windows * static_cast<int>(window)) << factor;
    EXPECT_EQ(served.watches, windows) << factor;
    // The choice serves until new figures settle; the new ones decide.
    EXPECT_EQ(*trials.decided(bytes), 1);
    EXPECT_TRUE(trials.trial_due(bytes));
    EXPECT_EQ(run_trials(trials, bytes, {0, 1}, {{0, 2e-3}, {1, 3e-3}}), (std::vector<int>{0, 1, 1, 0}));
    EXPECT_EQ(*trials.decided(bytes), 0) << factor;
    const std::string text = trials.explain(name_of);
    EXPECT_NE(text.find("; timed again 1x after a drift)"), std::string::npos) << text;
    if (windows > 1) {
      EXPECT_NE(text.find("; " + std::to_string(windows - 1) + " drifted windows cost less than the trials"),
                std::string::npos)
          << text;
    }
  }
}

// Trials that run a slow contender cost much: a window of noise does not
// buy them again (the windows after it are on the figure, and the count
// starts over), and a lasting drift starts them once it has cost as much.
TEST(AllreduceTrials, ANoisyWindowDoesNotBuyExpensiveTrials) {
  const size_t bytes = 1 << 20;
  AllreduceTrials trials;
  // 1, 1 and 30 ms; round two 1 and 1 ms: 29 ms more than five calls of the choice, and two agreements.
  run_trials(trials, bytes, {0, 1, 2}, {{0, 1e-3}, {1, 1e-3}, {2, 30e-3}});
  ASSERT_EQ(*trials.decided(bytes), 0);
  const double cost = 29e-3 + 2 * AllreduceTrials::kFirstAgreementSeconds;
  const int window = static_cast<int>(AllreduceTrials::kMinWatchCalls);
  ASSERT_FALSE(serve(trials, bytes, 1e-3, window).restart.has_value());  // the first window
  for (int round = 0; round < 3; ++round) {
    const Served noise = serve(trials, bytes, 3e-3, window);  // one window at 3x: 4 ms lost
    EXPECT_FALSE(noise.restart.has_value()) << round;
    const Served calm = serve(trials, bytes, 1e-3, 5 * window);
    EXPECT_FALSE(calm.restart.has_value()) << round;
    EXPECT_EQ(calm.watches, 5) << round;
  }
  // A lasting 2x: 2 ms lost per window, so the trials come back after ceil(29.01 / 2) windows.
  const Served lasting = serve(trials, bytes, 2e-3, 1000);
  ASSERT_TRUE(lasting.restart.has_value());
  EXPECT_TRUE(lasting.restart->drift);
  const int windows = static_cast<int>(std::ceil(cost / (window * 1e-3)));
  EXPECT_EQ(lasting.watches, windows);
  EXPECT_TRUE(trials.trial_due(bytes));
  EXPECT_NE(trials.explain(name_of).find("; " + std::to_string(3 + windows - 1) +
                                         " drifted windows cost less than the trials; timed again 1x after a drift"),
            std::string::npos)
      << trials.explain(name_of);
}

TEST(AllreduceTrials, TheFirstWindowCountsOnlySlowerCallsAndThenGivesTheFigure) {
  const size_t bytes = 1 << 22;
  AllreduceTrials trials;
  run_trials(trials, bytes, {0, 1}, {{0, 2e-3}, {1, 1e-3}});
  // Twice as fast as the trials: no restart, and 0.5 ms is the figure now.
  EXPECT_FALSE(serve(trials, bytes, 0.5e-3, 2).restart.has_value());
  const Served back = serve(trials, bytes, 1e-3, 40);  // 2x the new figure
  ASSERT_TRUE(back.restart.has_value());
  EXPECT_DOUBLE_EQ(back.restart->ratio, 2.0);
  // After the new trials, a slower first window restarts them at once.
  run_trials(trials, bytes, {0, 1}, {{0, 2e-3}, {1, 1e-3}});
  const Served slower = serve(trials, bytes, 3e-3, 40);
  ASSERT_TRUE(slower.restart.has_value());
  // The restarted trials kept the choice: its windows are twice as long.
  EXPECT_EQ(slower.calls, 2 * static_cast<int>(AllreduceTrials::kMinWatchCalls));
}

// A window reads the clock only for its last kTimedWatchCalls calls: the
// seconds given for the others are not read.
TEST(AllreduceTrials, AWindowTimesOnlyItsLastCalls) {
  const size_t bytes = 1 << 20;
  AllreduceTrials trials;
  run_trials(trials, bytes, {0, 1}, {{0, 2e-6}, {1, 1e-6}});  // 1 us calls: a long window
  // About kFirstAgreementSeconds / (kWatchShare x 1 us) = 250 calls.
  std::vector<bool> clocked;
  for (Agreement due = Agreement::kNone; due != Agreement::kWatch && clocked.size() < 1000;) {
    clocked.push_back(trials.clock_due(bytes));
    due = trials.record(bytes, 1, clocked.back() ? 1e-6 : 0.0, false, {});  // 0: were it read, the fastest
  }
  ASSERT_GE(clocked.size(), 250u);
  ASSERT_LE(clocked.size(), 251u);
  for (size_t call = 0; call < clocked.size(); ++call)
    EXPECT_EQ(clocked[call], call + AllreduceTrials::kTimedWatchCalls >= clocked.size()) << call;
  const std::vector<double> mine = trials.watch_figures(bytes);
  ASSERT_EQ(mine.size(), 3u);
  EXPECT_DOUBLE_EQ(mine[0], 1e-6 / bytes);
  EXPECT_FALSE(trials.review(bytes, mine).has_value());
  EXPECT_TRUE(AllreduceTrials().clock_due(bytes));  // a group's first call is a trial
}

// In and out of place often prefer different algorithms: a rank whose calls
// moved to a placement none of its trial calls had starts the trials again,
// even at the same speed. Trials that saw both placements are not restarted.
TEST(AllreduceTrials, APlacementNewToTheTrialsStartsThemAgain) {
  const size_t bytes = 1 << 20;
  AllreduceTrials out_only;
  run_trials(out_only, bytes, {0, 1}, {{0, 2e-3}, {1, 1e-3}});
  EXPECT_FALSE(serve(out_only, bytes, 1e-3, 20, false).restart.has_value());
  const Served moved = serve(out_only, bytes, 1e-3, 20, true);
  ASSERT_TRUE(moved.restart.has_value());
  EXPECT_TRUE(moved.restart->placement);
  EXPECT_FALSE(moved.restart->drift);
  EXPECT_LE(moved.calls, static_cast<int>(AllreduceTrials::kMinWatchCalls));
  run_trials(out_only, bytes, {0, 1}, {{0, 1e-3}, {1, 2e-3}}, true);
  EXPECT_EQ(*out_only.decided(bytes), 0);
  EXPECT_NE(out_only.explain(name_of).find("; timed again 1x after a change of placement)"), std::string::npos)
      << out_only.explain(name_of);
  // Back out of place: new to this cycle's trials, which were all in place.
  EXPECT_TRUE(serve(out_only, bytes, 1e-3, 20, false).restart.has_value());

  // Trials with calls of both placements (as on a rank of a mixed call).
  AllreduceTrials both;
  const std::vector<int> candidates{0, 1};
  const std::vector<double> seconds{2e-3, 1e-3, 2e-3, 1e-3};
  for (size_t call = 0; call < 4; ++call) {
    const int pick = both.trial_pick(bytes, candidates);
    const Agreement due = both.record(bytes, pick, seconds[call], call % 2 == 1, candidates);
    if (due == Agreement::kChallenger) both.choose_challenger(bytes, both.figures(bytes));
    if (due == Agreement::kSettle) both.settle(bytes, both.figures(bytes));
  }
  EXPECT_FALSE(serve(both, bytes, 1e-3, 20, true).restart.has_value());
  EXPECT_FALSE(serve(both, bytes, 1e-3, 20, false).restart.has_value());
}

// A window lasts until its agreement takes about kWatchShare of the calls'
// time, from the slowest rank's last agreement cost (a guess before any).
TEST(AllreduceTrials, TheWindowKeepsTheAgreementsShareSmall) {
  const size_t bytes = 1 << 20;
  AllreduceTrials trials;
  run_trials(trials, bytes, {0, 1}, {{0, 2e-6}, {1, 1e-6}});  // 1 us calls
  const double guess = AllreduceTrials::kFirstAgreementSeconds / (AllreduceTrials::kWatchShare * 1e-6);
  EXPECT_EQ(window_length(trials, bytes, 1e-6), static_cast<int>(std::ceil(guess)));
  // Agreed: 1 us calls, agreements of 20 ns: the shortest window.
  EXPECT_FALSE(trials.review(bytes, {1e-6 / bytes, 0, 2e-8}).has_value());
  EXPECT_EQ(window_length(trials, bytes, 1e-6), static_cast<int>(AllreduceTrials::kMinWatchCalls));
  // Agreements of 1 us: 50 calls.
  EXPECT_FALSE(trials.review(bytes, {1e-6 / bytes, 0, 1e-6}).has_value());
  EXPECT_EQ(window_length(trials, bytes, 1e-6), 50);
  EXPECT_ANY_THROW(trials.review(bytes, {1e-6 / bytes, 0}));  // a finished window needs three figures
  // However slow the agreements, the cycle's next trials still come: a
  // window that would outlast the cycle is not opened, and no call is clocked.
  EXPECT_FALSE(trials.review(bytes, {1e-6 / bytes, 0, 1.0}).has_value());
  EXPECT_FALSE(trials.clock_due(bytes));
  EXPECT_EQ(window_length(trials, bytes, 1e-6), 0);
  EXPECT_EQ(trials.trial_pick(bytes, {0, 1}), 0);

  // A settle carries the slowest rank's last agreement cost: 1 us here, so
  // 1 us calls get windows of 50.
  AllreduceTrials timed;
  run_trials(timed, bytes, {0, 1}, {{0, 2e-6}, {1, 1e-6}});  // agrees on this rank's figures: 5 us, the guess
  EXPECT_EQ(window_length(timed, bytes, 1e-6), static_cast<int>(std::ceil(guess)));
  timed.note_agreement_seconds(1e-6);
  run_trials(timed, 2 * bytes, {0, 1}, {{0, 2e-6}, {1, 1e-6}});
  EXPECT_EQ(window_length(timed, 2 * bytes, 1e-6), 50);
}

// A drift that the new trials answer with the same choice was noise or a
// passing load: the next windows are twice as long, up to 64 times.
TEST(AllreduceTrials, WatchedCyclesThatKeepTheChoiceWatchLessOften) {
  const size_t bytes = 1 << 24;
  AllreduceTrials trials;
  run_trials(trials, bytes, {0, 1}, {{0, 20e-3}, {1, 10e-3}});  // 10 ms calls: windows of kMinWatchCalls
  const int shortest = static_cast<int>(AllreduceTrials::kMinWatchCalls);
  for (int stretch : {2, 4}) {
    const Served served = serve(trials, bytes, 30e-3, 1000);
    ASSERT_TRUE(served.restart.has_value());
    EXPECT_EQ(served.calls, shortest * stretch / 2);
    run_trials(trials, bytes, {0, 1}, {{0, 20e-3}, {1, 10e-3}});
    ASSERT_EQ(*trials.decided(bytes), 1);
  }
  // The choice changes: the windows are short again.
  ASSERT_TRUE(serve(trials, bytes, 30e-3, 1000).restart.has_value());
  run_trials(trials, bytes, {0, 1}, {{0, 10e-3}, {1, 20e-3}});
  ASSERT_EQ(*trials.decided(bytes), 0);
  EXPECT_EQ(serve(trials, bytes, 30e-3, 1000).calls, shortest);
}

// Without the watch (one rank per node), a settled group is never re-timed
// before its next cycle and its calls are not clocked.
TEST(AllreduceTrials, WithoutTheWatchOnlyTheCyclesComeBack) {
  const size_t bytes = 1 << 20;
  AllreduceTrials trials(false);
  run_trials(trials, bytes, {0, 1}, {{0, 2e-3}, {1, 1e-3}});
  for (uint64_t call = 4; call < AllreduceTrials::kCallsPerCycle; ++call) {
    ASSERT_FALSE(trials.clock_due(bytes)) << call;
    ASSERT_EQ(trials.record(bytes, 1, 9e-3, call % 2 == 0, {}), Agreement::kNone) << call;
  }
  EXPECT_TRUE(trials.trial_due(bytes));
}

}  // namespace
}  // namespace matexcomm
