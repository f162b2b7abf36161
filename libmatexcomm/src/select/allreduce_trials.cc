// allreduce_trials.cc - see allreduce_trials.h.
#include "select/allreduce_trials.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "core/table_text.h"

namespace matexcomm {

int AllreduceTrials::group_of(size_t bytes) {
  MATEX_REQUIRE(bytes > 0, MATEX_ERR_INTERNAL, "allreduce trials need a non-empty call");
  if (bytes < 4) return static_cast<int>(bytes) - 1;  // groups 0-2: 1, 2 and 3 B
  int power = 0;
  for (size_t rest = bytes; rest >>= 1;) ++power;
  const int quarter = static_cast<int>((bytes >> (power - 2)) & 3);
  return 4 * power + quarter - 5;  // 4 B is group 3, right after 3 B
}

size_t AllreduceTrials::group_start(int group) {
  if (group < 3) return static_cast<size_t>(group) + 1;
  const int power = (group + 5) / 4;
  const int quarter = (group + 5) % 4;
  return static_cast<size_t>(4 + quarter) << (power - 2);
}

namespace {

// The position of a call in its cycle, from the calls since the cycle began.
uint64_t in_cycle(uint64_t calls) { return calls % AllreduceTrials::kCallsPerCycle; }
// Whether the call at `position` is a trial, with `candidates` of this cycle
// (unknown, 0, before its first call): round one, then two more.
bool is_trial(uint64_t position, size_t candidates) {
  return position == 0 || (candidates >= 2 && position < candidates + 2);
}

// For --explain: how often the watch started the trials again.
std::string restarts(uint64_t after_drift, uint64_t after_placement, uint64_t deferred) {
  std::string text;
  if (deferred > 0) text += "; " + std::to_string(deferred) + " drifted windows cost less than the trials";
  if (after_drift > 0) text += "; timed again " + std::to_string(after_drift) + "x after a drift";
  if (after_placement > 0) text += "; timed again " + std::to_string(after_placement) + "x after a change of placement";
  return text;
}

}  // namespace

const AllreduceTrials::Group* AllreduceTrials::find(size_t bytes) const {
  const size_t group = static_cast<size_t>(group_of(bytes));
  return group < groups_.size() ? &groups_[group] : nullptr;
}

AllreduceTrials::Group& AllreduceTrials::at(size_t bytes) {
  const size_t group = static_cast<size_t>(group_of(bytes));
  if (group >= groups_.size()) groups_.resize(group + 1);
  return groups_[group];
}

// The position of a group's next call in its cycle.
uint64_t AllreduceTrials::position_of(const Group& group) { return in_cycle(group.calls - group.cycle_start); }

bool AllreduceTrials::trial_due(size_t bytes) const {
  const Group* group = find(bytes);
  if (group == nullptr) return true;
  return is_trial(position_of(*group), group->cycle.candidates.size());
}

size_t AllreduceTrials::group_floor(size_t bytes) { return group_start(group_of(bytes)); }

int AllreduceTrials::trial_pick(size_t bytes, const std::vector<int>& candidates) const {
  const Group* group = find(bytes);
  const uint64_t position = group == nullptr ? 0 : position_of(*group);
  if (position == 0) {
    MATEX_REQUIRE(!candidates.empty() && candidates.size() <= kMaxCandidates, MATEX_ERR_INTERNAL,
                  "allreduce trials take 1 to " + std::to_string(kMaxCandidates) + " candidates, not " +
                      std::to_string(candidates.size()));
    return candidates[0];
  }
  const size_t count = group->cycle.candidates.size();
  MATEX_REQUIRE(is_trial(position, count), MATEX_ERR_INTERNAL, "no allreduce trial is due at this size");
  if (position < count) return group->cycle.candidates[position];
  return group->cycle.candidates[position == count ? group->cycle.challenger : 0];
}

AllreduceTrials::Agreement AllreduceTrials::record(size_t bytes, int algorithm, double seconds, bool in_place,
                                                   const std::vector<int>& candidates) {
  Group& group = at(bytes);
  const uint64_t position = position_of(group);
  const unsigned placement = in_place ? 2 : 1;
  if (position == 0) {
    // The cycle starts only now that its first call returned: a call that
    // failed on some ranks left every rank's state as it was.
    MATEX_REQUIRE(!candidates.empty() && candidates.size() <= kMaxCandidates && candidates[0] == algorithm,
                  MATEX_ERR_INTERNAL, "a cycle of allreduce trials must open with the rule's pick");
    group.cycle = Outcome{candidates, {}, 0, {}, 0};
    group.fastest.assign(candidates.size(), -1);
    group.placements = 0;
    group.trial_seconds = 0;
    group.trial_bytes = 0;
    group.watch.window = 0;  // not watched until the cycle settles
    if (candidates.size() == 1) {
      group.choice = candidates[0];
      group.settled.reset();  // nothing was timed
    }
  }
  const size_t count = group.cycle.candidates.size();
  ++group.calls;
  const double per_byte = seconds / static_cast<double>(bytes);
  if (count < 2 || !is_trial(position, count)) return watch_call(group, per_byte, placement);
  const size_t index = position < count ? position : position == count ? group.cycle.challenger : 0;
  MATEX_REQUIRE(group.cycle.candidates[index] == algorithm, MATEX_ERR_INTERNAL,
                "an allreduce trial ran another algorithm than its turn's");
  group.placements |= placement;
  group.trial_seconds += seconds;
  group.trial_bytes += static_cast<double>(bytes);
  double& fastest = group.fastest[index];
  if (fastest < 0 || per_byte < fastest) fastest = per_byte;
  if (position + 1 == count) return Agreement::kChallenger;
  return position == count + 1 ? Agreement::kSettle : Agreement::kNone;
}

AllreduceTrials::Agreement AllreduceTrials::watch_call(Group& group, double per_byte, unsigned placement) {
  Watch& watch = group.watch;
  if (watch.window == 0) return Agreement::kNone;
  if (in_timed_tail(watch)) {
    if (watch.fastest < 0 || per_byte < watch.fastest) watch.fastest = per_byte;
    // Moved: every call of the tail had a placement new to the cycle, not one stray call.
    watch.moved = watch.moved && (group.placements & placement) == 0;
  }
  return ++watch.watched == watch.window ? Agreement::kWatch : Agreement::kNone;
}

bool AllreduceTrials::in_timed_tail(const Watch& watch) {
  return watch.window > 0 && watch.watched + std::min(watch.window, kTimedWatchCalls) >= watch.window;
}

bool AllreduceTrials::clock_due(size_t bytes) const {
  const Group* group = find(bytes);
  if (group == nullptr) return true;
  return is_trial(position_of(*group), group->cycle.candidates.size()) || in_timed_tail(group->watch);
}

std::vector<double> AllreduceTrials::figures(size_t bytes) const {
  const Group* group = find(bytes);
  if (group == nullptr || group->fastest.empty()) return {};
  const uint64_t position = position_of(*group);
  if (position == group->cycle.candidates.size()) return group->fastest;  // after round one
  // After round two; the last agreement's cost rides along for the watch,
  // and the cycle's own time for what the trials cost.
  return {group->fastest[0], group->fastest[group->cycle.challenger], last_agreement_seconds_,
          group->trial_seconds};
}

void AllreduceTrials::choose_challenger(size_t bytes, const std::vector<double>& slowest_rank_figures) {
  Group& group = at(bytes);
  MATEX_REQUIRE(slowest_rank_figures.size() == group.cycle.candidates.size(), MATEX_ERR_INTERNAL,
                "round one of the allreduce trials needs a figure per candidate");
  group.cycle.first_round = slowest_rank_figures;
  // The agreed figures are the same on every rank, so is the challenger (ties: the earlier candidate).
  group.cycle.challenger = 1;
  for (size_t i = 2; i < slowest_rank_figures.size(); ++i) {
    if (slowest_rank_figures[i] < slowest_rank_figures[group.cycle.challenger]) group.cycle.challenger = i;
  }
}

void AllreduceTrials::settle(size_t bytes, const std::vector<double>& slowest_rank_figures) {
  Group& group = at(bytes);
  MATEX_REQUIRE(slowest_rank_figures.size() == 4 && group.cycle.challenger > 0, MATEX_ERR_INTERNAL,
                "round two of the allreduce trials needs the rule's pick's and the challenger's figures, the "
                "last agreement's cost and the cycle's time");
  group.cycle.final_round.assign(slowest_rank_figures.begin(), slowest_rank_figures.begin() + 2);
  agreed_agreement_seconds_ = slowest_rank_figures[2];
  const double kept = slowest_rank_figures[0];
  const double challenger = slowest_rank_figures[1];
  const bool wins = kept > 0 && challenger > 0 && challenger < kept * (1 - kMargin);
  const int previous = group.choice.value_or(-1);
  group.choice = group.cycle.candidates[wins ? group.cycle.challenger : 0];
  // What the cycle cost over running the choice alone: the slowest rank's
  // time in its calls (every rank's calls had the same sizes), less the
  // choice's time for as many bytes, plus the two agreements.
  const double chosen_per_byte = slowest_rank_figures[wins ? 1 : 0];
  group.cycle.cost_seconds = std::max(0.0, slowest_rank_figures[3] - chosen_per_byte * group.trial_bytes) +
                             2 * agreed_agreement_seconds_;
  group.settled = group.cycle;
  group.fastest.assign(group.cycle.candidates.size(), -1);
  // Watch the choice from now on. The first window is sized from what every
  // rank has alike: the settled figure and the last agreed agreement cost.
  Watch& watch = group.watch;
  const bool same_again = watch.restarted && previous == *group.choice;
  watch.stretch = same_again ? std::min<uint64_t>(2 * watch.stretch, 64) : 1;
  watch.restarted = false;
  watch.first = true;
  watch.drift_loss = 0;
  watch.settled_per_byte = chosen_per_byte;
  const double call_seconds = watch.settled_per_byte * static_cast<double>(group_start(group_of(bytes)));
  if (watching_) open_window(group, window_for(call_seconds, agreed_agreement_seconds_, watch.stretch));
}

uint64_t AllreduceTrials::window_for(double call_seconds, double agreement_seconds, uint64_t stretch) {
  double calls = static_cast<double>(kMinWatchCalls);
  if (call_seconds > 0) calls = std::max(calls, std::ceil(agreement_seconds / (kWatchShare * call_seconds)));
  calls *= static_cast<double>(stretch);
  return static_cast<uint64_t>(std::min(calls, static_cast<double>(kCallsPerCycle)));
}

void AllreduceTrials::open_window(Group& group, uint64_t calls) {
  // A window that would outlast the cycle is not opened: the cycle's next
  // trials come first (and its calls go unclocked).
  Watch& watch = group.watch;
  watch.window = calls <= kCallsPerCycle - position_of(group) ? calls : 0;
  watch.watched = 0;
  watch.fastest = -1;
  watch.moved = true;
}

std::vector<double> AllreduceTrials::watch_figures(size_t bytes) const {
  const Group* group = find(bytes);
  if (group == nullptr || group->watch.window == 0) return {};
  return {group->watch.fastest, group->watch.moved ? 1.0 : 0.0, last_agreement_seconds_};
}

std::optional<AllreduceTrials::Restart> AllreduceTrials::review(size_t bytes,
                                                                const std::vector<double>& slowest_rank_figures) {
  Group& group = at(bytes);
  Watch& watch = group.watch;
  MATEX_REQUIRE(slowest_rank_figures.size() == 3 && watch.window > 0 && watch.watched == watch.window,
                MATEX_ERR_INTERNAL, "a watch of the allreduce trials needs a finished window's three figures");
  Restart restart;
  restart.ratio = watch.settled_per_byte > 0 ? slowest_rank_figures[0] / watch.settled_per_byte : 1;
  // A group's first calls run colder than those after: the first window
  // counts only calls slower than the trials', then sets the figure.
  restart.drift = restart.ratio > kDrift || (!watch.first && restart.ratio < 1 / kDrift);
  restart.placement = slowest_rank_figures[1] > 0;
  agreed_agreement_seconds_ = slowest_rank_figures[2];
  // A drift starts the trials again once the windows in a row that drifted
  // have cost (or, faster, stand to save) as much time as the trials cost: a
  // window of noise on many ranks does not buy a cycle that runs the slowest
  // contender, and a lasting drift costs at most about twice the trials.
  const double floor_bytes = static_cast<double>(group_start(group_of(bytes)));
  const double call_seconds = slowest_rank_figures[0] * floor_bytes;
  if (restart.drift) {
    watch.drift_loss +=
        static_cast<double>(watch.window) * std::abs(slowest_rank_figures[0] - watch.settled_per_byte) * floor_bytes;
    restart.drift = watch.drift_loss >= group.settled->cost_seconds;
    watch.deferred_drifts += !restart.drift && !restart.placement;
  } else {
    watch.drift_loss = 0;
  }
  if (restart.drift || restart.placement) {
    // Every rank reviewed the same figures, so every rank starts the new cycle at the same call.
    group.cycle_start = group.calls;
    watch.window = 0;
    watch.restarted = true;
    watch.drift_restarts += restart.drift;
    watch.placement_restarts += restart.placement && !restart.drift;
    return restart;
  }
  if (watch.drift_loss > 0) {
    // A drift not yet worth a cycle: the figure and the first window's leave stay as they were.
    open_window(group, window_for(call_seconds, slowest_rank_figures[2], watch.stretch));
    return std::nullopt;
  }
  if (watch.first && slowest_rank_figures[0] > 0) watch.settled_per_byte = slowest_rank_figures[0];
  watch.first = false;
  open_window(group, window_for(call_seconds, slowest_rank_figures[2], watch.stretch));
  return std::nullopt;
}

std::optional<int> AllreduceTrials::decided(size_t bytes) const {
  const Group* group = find(bytes);
  return group == nullptr ? std::nullopt : group->choice;
}

std::string AllreduceTrials::explain(const std::function<const char*(int)>& name_of) const {
  std::string text;
  for (size_t index = 0; index < groups_.size(); ++index) {
    if (!groups_[index].settled) continue;
    const Outcome& state = *groups_[index].settled;
    const int group = static_cast<int>(index);
    const double low = static_cast<double>(group_start(group));
    const double high = static_cast<double>(group_start(group + 1));
    // Per-byte figures shown as the time of a call at the group's lower size.
    text += "    [" + with_unit(low) + ", " + with_unit(high) + "): " + name_of(*groups_[index].choice) + "; at " +
            with_unit(low) + ", round one";
    for (size_t i = 0; i < state.candidates.size(); ++i) {
      text += std::string(i == 0 ? " " : ", ") + name_of(state.candidates[i]) + " " +
              microseconds(state.first_round[i] * low);
    }
    text += std::string("; round two ") + name_of(state.candidates[0]) + " " +
            microseconds(state.final_round[0] * low) + ", " + name_of(state.candidates[state.challenger]) + " " +
            microseconds(state.final_round[1] * low) + "; the cycle cost " + microseconds(state.cost_seconds) + " (" +
            std::to_string(groups_[index].calls) + " calls" +
            restarts(groups_[index].watch.drift_restarts, groups_[index].watch.placement_restarts,
                     groups_[index].watch.deferred_drifts) + ")\n";
  }
  return text;
}

}  // namespace matexcomm
