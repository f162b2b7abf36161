// allreduce_trials.h - auto's allreduce, chosen by timing the contenders on
// the caller's own calls.
//
// Why: which allreduce wins depends on where the node's cores sit, and a size
// rule or a table timed once cannot know. On this project's 2-vCPU VM the
// placement changes between runs: with the two vCPUs close (MPI latency
// 0.2 us) rs_ar_ag beat rs_ar_ag_cma by 1.6x at 8 MiB; placed apart (0.45 us)
// it lost by 1.4-2.5x at every size. On 4 ranks in virtual nodes, MPI's own
// allreduce beat the rail algorithm the calibration at init picked by
// 1.1-1.6x from 1 to 16 MiB (docs/algorithms.md, "Trials").
// How: calls are grouped by size, four groups per power of two (sizes in a
//   group differ by less than 25 %, so per-byte figures compare fairly). A
//   group's cycle starts with the caller's candidates (registry indices, the
//   rule's or table's pick first, at most kMaxCandidates, the same on every
//   rank). Round one runs each candidate once; the caller then agrees on the
//   slowest rank's figures (max over ranks), and the fastest challenger goes
//   on. Round two runs the rule's pick and that challenger once more; the
//   caller agrees again, and settle() keeps the rule's pick unless the
//   challenger's fastest call was kMargin faster: the group's choice, the same
//   on every rank. The trials repeat every kCallsPerCycle calls of a group, since the placement
//   can change while a job runs.
// Cost: per group and cycle, candidates + 2 calls (4 to 6; with up to three
//   candidates they fit in matex-bench's 5 warm-up calls) and two
//   MPI_Allreduce of a few doubles; otherwise an array lookup per call.
//   The challenger is the fastest of single calls, so luck favours it a
//   little; its second call and the margin temper that.
// Preconditions: every rank makes the same calls with the same sizes (as
//   allreduce requires) and takes part for the same calls with the same
//   candidates (the caller decides from state that is identical on every
//   rank), so that the rounds and the agreements line up.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace matexcomm {

class AllreduceTrials {
 public:
  static constexpr size_t kMaxCandidates = 4;
  static constexpr uint64_t kCallsPerCycle = 512;
  static constexpr double kMargin = 0.03;  // as the allreduce table's
  enum class Agreement { kNone, kChallenger, kSettle };

  // The smallest size of the group `bytes` (> 0) falls in: the caller works
  // out a group's candidates there, whichever size opens its cycle.
  static size_t group_floor(size_t bytes);
  // Whether the next call of `bytes` (> 0) is a trial (to be timed).
  bool trial_due(size_t bytes) const;
  // The algorithm that trial runs; changes nothing. `candidates` (the rule's
  // pick first, 1 to kMaxCandidates distinct indices) is read at a cycle's
  // first call only, which runs the rule's pick.
  int trial_pick(size_t bytes, const std::vector<int>& candidates) const;
  // Records a call of `bytes` that ran `algorithm` in `seconds` (read for
  // trials only) and returned on every rank; at a cycle's first call it also
  // starts the cycle with `candidates` (as given to trial_pick; with one
  // there is nothing to try and it serves the group). Says which agreement is
  // due after it: kChallenger, agree on figures() (max over ranks) and pass
  // them to choose_challenger(); kSettle, agree on figures() and pass them to
  // settle().
  Agreement record(size_t bytes, int algorithm, double seconds, const std::vector<int>& candidates);
  // This rank's fastest seconds per byte: every candidate's after round one,
  // [rule's pick, challenger] after round two.
  std::vector<double> figures(size_t bytes) const;
  void choose_challenger(size_t bytes, const std::vector<double>& slowest_rank_figures);
  void settle(size_t bytes, const std::vector<double>& slowest_rank_figures);
  // The settled choice for `bytes`, if its group has one.
  std::optional<int> decided(size_t bytes) const;
  // Lines for --explain: each settled group's figures and choice.
  std::string explain(const std::function<const char*(int)>& name_of) const;

 private:
  // A cycle's agreed figures (per byte), kept for --explain.
  struct Outcome {
    std::vector<int> candidates;
    std::vector<double> first_round;  // per candidate
    size_t challenger = 0;
    std::vector<double> final_round;  // the rule's pick, the challenger
  };
  struct Group {
    uint64_t calls = 0;
    Outcome cycle;                  // this cycle's, filled as it goes
    std::vector<double> fastest;    // this rank's per candidate, this cycle (negative: none yet)
    std::optional<Outcome> settled;  // the last settled cycle's
    std::optional<int> choice;
  };
  static int group_of(size_t bytes);
  static size_t group_start(int group);  // the smallest size in a group
  const Group* find(size_t bytes) const;   // null: no call of its group yet
  Group& at(size_t bytes);
  // By group: 4 per power of two (floor(log2(bytes)) and the next two bits),
  // grown to the largest group seen (at most 4 * 64 entries).
  std::vector<Group> groups_;
};

}  // namespace matexcomm
