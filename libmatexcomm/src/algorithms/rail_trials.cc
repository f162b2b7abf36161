// rail_trials.cc - see rail_trials.h.
#include "algorithms/rail_trials.h"

#include <cstdio>

#include "core/error.h"
#include "core/table_text.h"

namespace matexcomm {

const char* rail_pick_name(RailPick pick) { return pick == RailPick::kCopies ? "rs_ar_ag" : "rs_ar_ag_cma"; }

int RailTrials::group_of(size_t bytes) {
  MATEX_REQUIRE(bytes > 0, MATEX_ERR_INTERNAL, "rail trials need a non-empty call");
  int group = 0;
  while (bytes >>= 1) ++group;
  return group;
}

namespace {

// The position of a group's next call in its cycle, and whether that is a trial.
uint64_t in_cycle(uint64_t calls) { return calls % RailTrials::kCallsPerCycle; }
bool is_trial(uint64_t position) { return position < 2 * RailTrials::kTrialsEach; }

}  // namespace

RailPick RailTrials::pick(size_t bytes) const {
  auto found = groups_.find(group_of(bytes));
  if (found == groups_.end()) return RailPick::kCopies;  // the first trial
  const Group& group = found->second;
  const uint64_t position = in_cycle(group.calls);
  if (is_trial(position)) return position % 2 == 0 ? RailPick::kCopies : RailPick::kSingleCopy;
  return group.choice.value_or(RailPick::kCopies);
}

bool RailTrials::record(size_t bytes, RailPick ran, double seconds) {
  Group& group = groups_[group_of(bytes)];
  const uint64_t position = in_cycle(group.calls++);
  if (!is_trial(position)) return false;
  double& fastest = group.fastest[static_cast<int>(ran)];
  const double per_byte = seconds / static_cast<double>(bytes);
  if (fastest < 0 || per_byte < fastest) fastest = per_byte;
  return position == 2 * kTrialsEach - 1;
}

std::array<double, 2> RailTrials::trial_figures(size_t bytes) const {
  auto found = groups_.find(group_of(bytes));
  return found == groups_.end() ? std::array<double, 2>{-1, -1} : found->second.fastest;
}

void RailTrials::settle(size_t bytes, const std::array<double, 2>& slowest_rank_figures) {
  Group& group = groups_[group_of(bytes)];
  group.agreed = slowest_rank_figures;
  // The figures are the same on every rank, so is this comparison.
  const bool single_copy_faster = slowest_rank_figures[1] >= 0 && slowest_rank_figures[0] >= 0 &&
                                  slowest_rank_figures[1] < slowest_rank_figures[0];
  group.choice = single_copy_faster ? RailPick::kSingleCopy : RailPick::kCopies;
  group.fastest = {-1, -1};
}

std::optional<RailPick> RailTrials::decided(size_t bytes) const {
  auto found = groups_.find(group_of(bytes));
  return found == groups_.end() ? std::nullopt : found->second.choice;
}

std::string RailTrials::explain() const {
  std::string text;
  char line[160];
  for (const auto& [group, state] : groups_) {
    if (!state.choice) continue;
    const double low = static_cast<double>(uint64_t{1} << group);
    // Per-byte figures shown as the time of a call at the group's lower size.
    std::snprintf(line, sizeof line, "    [%s, %s): %s (rs_ar_ag %s, rs_ar_ag_cma %s at %s; %llu calls)\n",
                  with_unit(low).c_str(), with_unit(2 * low).c_str(), rail_pick_name(*state.choice),
                  microseconds(state.agreed[0] * low).c_str(), microseconds(state.agreed[1] * low).c_str(),
                  with_unit(low).c_str(), static_cast<unsigned long long>(state.calls));
    text += line;
  }
  return text;
}

}  // namespace matexcomm
