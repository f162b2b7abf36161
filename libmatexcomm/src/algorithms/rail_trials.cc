// rail_trials.cc - see rail_trials.h.
#include "algorithms/rail_trials.h"

#include <cstdio>

#include "core/error.h"
#include "core/table_text.h"

namespace matexcomm {

const char* rail_pick_name(RailPick pick) { return pick == RailPick::kCopies ? "rs_ar_ag" : "rs_ar_ag_cma"; }

int RailTrials::group_of(size_t bytes) {
  MATEX_REQUIRE(bytes > 0, MATEX_ERR_INTERNAL, "rail trials need a non-empty call");
  if (bytes < 4) return static_cast<int>(bytes) - 1;  // groups 0-2: 1, 2 and 3 B
  int power = 0;
  for (size_t rest = bytes; rest >>= 1;) ++power;
  const int quarter = static_cast<int>((bytes >> (power - 2)) & 3);
  return 4 * power + quarter - 5;  // 4 B is group 3, right after 3 B
}

size_t RailTrials::group_start(int group) {
  if (group < 3) return static_cast<size_t>(group) + 1;
  const int power = (group + 5) / 4;
  const int quarter = (group + 5) % 4;
  return static_cast<size_t>(4 + quarter) << (power - 2);
}

namespace {

// The position of a group's next call in its cycle, and whether that is a trial.
uint64_t in_cycle(uint64_t calls) { return calls % RailTrials::kCallsPerCycle; }
bool is_trial(uint64_t position) { return position < 2 * RailTrials::kTrialsEach; }

}  // namespace

const RailTrials::Group* RailTrials::find(size_t bytes) const {
  const size_t group = static_cast<size_t>(group_of(bytes));
  return group < groups_.size() ? &groups_[group] : nullptr;
}

RailTrials::Group& RailTrials::at(size_t bytes) {
  const size_t group = static_cast<size_t>(group_of(bytes));
  if (group >= groups_.size()) groups_.resize(group + 1);
  return groups_[group];
}

RailPick RailTrials::pick(size_t bytes) const {
  const Group* group = find(bytes);
  const uint64_t position = in_cycle(group == nullptr ? 0 : group->calls);
  if (is_trial(position)) return position % 2 == 0 ? RailPick::kCopies : RailPick::kSingleCopy;
  return group->choice.value_or(RailPick::kCopies);
}

bool RailTrials::trial_due(size_t bytes) const {
  const Group* group = find(bytes);
  return is_trial(in_cycle(group == nullptr ? 0 : group->calls));
}

bool RailTrials::record(size_t bytes, RailPick ran, double seconds) {
  Group& group = at(bytes);
  const uint64_t position = in_cycle(group.calls++);
  if (!is_trial(position)) return false;
  double& fastest = group.fastest[static_cast<int>(ran)];
  const double per_byte = seconds / static_cast<double>(bytes);
  if (fastest < 0 || per_byte < fastest) fastest = per_byte;
  return position == 2 * kTrialsEach - 1;
}

std::array<double, 2> RailTrials::trial_figures(size_t bytes) const {
  const Group* group = find(bytes);
  return group == nullptr ? std::array<double, 2>{-1, -1} : group->fastest;
}

void RailTrials::settle(size_t bytes, const std::array<double, 2>& slowest_rank_figures, RailPick by_rule) {
  Group& group = at(bytes);
  group.agreed = slowest_rank_figures;
  // The figures and the rule's pick are the same on every rank, so is this comparison.
  const double kept = slowest_rank_figures[static_cast<int>(by_rule)];
  const RailPick other = by_rule == RailPick::kCopies ? RailPick::kSingleCopy : RailPick::kCopies;
  const double challenger = slowest_rank_figures[static_cast<int>(other)];
  group.choice = kept > 0 && challenger > 0 && challenger < kept * (1 - kMargin) ? other : by_rule;
  group.fastest = {-1, -1};
}

std::optional<RailPick> RailTrials::decided(size_t bytes) const {
  const Group* group = find(bytes);
  return group == nullptr ? std::nullopt : group->choice;
}

std::string RailTrials::explain() const {
  std::string text;
  char line[160];
  for (size_t index = 0; index < groups_.size(); ++index) {
    const Group& state = groups_[index];
    const int group = static_cast<int>(index);
    if (!state.choice) continue;
    const double low = static_cast<double>(group_start(group));
    const double high = static_cast<double>(group_start(group + 1));
    // Per-byte figures shown as the time of a call at the group's lower size.
    std::snprintf(line, sizeof line, "    [%s, %s): %s (rs_ar_ag %s, rs_ar_ag_cma %s at %s; %llu calls)\n",
                  with_unit(low).c_str(), with_unit(high).c_str(), rail_pick_name(*state.choice),
                  microseconds(state.agreed[0] * low).c_str(), microseconds(state.agreed[1] * low).c_str(),
                  with_unit(low).c_str(), static_cast<unsigned long long>(state.calls));
    text += line;
  }
  return text;
}

}  // namespace matexcomm
