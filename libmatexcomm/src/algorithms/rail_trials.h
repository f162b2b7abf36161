// rail_trials.h - auto's choice between the two rail algorithms, rs_ar_ag
// (copies through the node's segment) and rs_ar_ag_cma (single copies), by
// timing both on the caller's own calls.
//
// Why: which of the two wins depends on where the node's cores sit, and a
// size rule or a table timed once cannot know. On this project's 2-vCPU VM
// the placement changes between runs: with the two vCPUs close (MPI latency
// 0.2 us) rs_ar_ag beat rs_ar_ag_cma by 1.6x at 8 MiB and 1.5-2x at 64 MiB;
// placed apart (0.45 us) it lost by 1.4-2.5x at every size
// (docs/algorithms.md, "Rail trials").
// How: calls are grouped by size, four groups per power of two (sizes in a
//   group differ by less than 25 %, so per-byte figures compare fairly).
//   Each group's first 2 * kTrialsEach calls alternate rs_ar_ag and
//   rs_ar_ag_cma, and each rank keeps each one's fastest seconds per byte.
//   After the last trial the caller agrees on the slowest rank's figures (one
//   MPI_Allreduce, max), and settle() keeps the size rule's pick unless the
//   other is kMargin faster: the group's choice, the same on every rank.
//   The trials repeat every kCallsPerCycle calls of a group, since the
//   placement can change while a job runs.
// Cost: per group and cycle, kTrialsEach calls of the slower algorithm and
//   one MPI_Allreduce of two doubles; otherwise an array lookup per call.
// Preconditions: every rank makes the same calls with the same sizes (as
//   allreduce requires), and takes part for the same calls (the caller
//   decides from state that is identical on every rank), so that the trial
//   phases and the agreement line up.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace matexcomm {

enum class RailPick : int { kCopies = 0, kSingleCopy = 1 };

class RailTrials {
 public:
  static constexpr int kTrialsEach = 2;  // within matex-bench's 5 warm-up calls
  static constexpr uint64_t kCallsPerCycle = 512;
  static constexpr double kMargin = 0.03;  // as the allreduce table's

  // What the next call of `bytes` (> 0) runs, and whether it is a trial (to be timed).
  RailPick pick(size_t bytes) const;
  bool trial_due(size_t bytes) const;
  // Records that call, which took `seconds` here (read for trials only). True when it was its
  // group's last trial: agree on trial_figures() (max over ranks), then settle().
  bool record(size_t bytes, RailPick ran, double seconds);
  // This rank's fastest seconds per byte in the trials just run: [kCopies], [kSingleCopy].
  std::array<double, 2> trial_figures(size_t bytes) const;
  // Makes `by_rule` the group's choice unless the agreed figures show the
  // other kMargin faster. `by_rule` must be the same on every rank.
  void settle(size_t bytes, const std::array<double, 2>& slowest_rank_figures, RailPick by_rule);
  // The settled choice for `bytes`, if its group has one.
  std::optional<RailPick> decided(size_t bytes) const;
  // Lines for --explain: each group's figures and choice.
  std::string explain() const;

 private:
  struct Group {
    uint64_t calls = 0;
    std::array<double, 2> fastest{-1, -1};  // this rank, current trials (negative: none yet)
    std::array<double, 2> agreed{-1, -1};   // the slowest rank's, last settled
    std::optional<RailPick> choice;
  };
  static int group_of(size_t bytes);
  static size_t group_start(int group);  // the smallest size in a group
  const Group* find(size_t bytes) const;   // null: no call of its group yet
  Group& at(size_t bytes);
  // By group: 4 per power of two (floor(log2(bytes)) and the next two bits),
  // grown to the largest group seen (at most 4 * 64 entries).
  std::vector<Group> groups_;
};

const char* rail_pick_name(RailPick pick);

}  // namespace matexcomm
