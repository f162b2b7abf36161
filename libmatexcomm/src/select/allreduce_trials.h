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
//   on. Round two runs that challenger and then the rule's pick once more (the
//   first call after an agreement pays for the ranks leaving it apart, and the
//   rule's pick already paid that in round one, so each of the two gets one
//   call behind another); the caller agrees again, and settle() keeps the
//   rule's pick unless the challenger's fastest call was kMargin faster: the
//   group's choice, the same on every rank. The trials repeat every
//   kCallsPerCycle calls of a group, since the placement can change while a
//   job runs.
// The watch, where the caller asks for it: the placement can also change
//   within seconds (the VM above switched in the middle of a benchmark run,
//   and a settled rs_ar_ag then ran 1.6-2x slower than rs_ar_ag_cma until the
//   end), and in and out of place often prefer different algorithms. So after
//   a group settles, each rank times the last kTimedWatchCalls calls of each
//   window of calls of the choice, and after the window the ranks agree (max
//   over ranks) on its fastest timed call, on whether a rank's timed calls
//   all had a placement its trial calls never had (they moved), and on what
//   the previous agreement cost. The trials start again at once when the
//   placement moved, or when the fastest call is kDrift off the choice's
//   figure, either way. That figure is the trials' at first: the first window
//   after a settle starts them again only if it is kDrift slower (a group's
//   first calls run colder than those after it) and then gives the figure. A
//   window lasts long enough that its agreement takes about kWatchShare of
//   the group's time (kMinWatchCalls at least; the agreement's cost is the
//   slowest rank's, carried by the last settle or review of any group), and
//   twice as long, up to 64 times, each time a watched cycle settled on the
//   choice it already had (a periodic cycle starts again from 1). A drift
//   starts the trials again only once the windows in a row that drifted were
//   off the figure by as much time in all as the last cycle cost over its
//   choice (the slowest rank's time in the trial calls, less the choice's for
//   as many bytes, plus two agreements): one window of noise, common on 16
//   ranks, does not buy a cycle that runs the slowest contender again, and a
//   lasting drift costs at most about twice the trials (the rent-or-buy rule).
//   A move to a placement the trials did not time restarts at once. A window
//   that would outlast the cycle is not opened: with agreements of 5 us,
//   groups of calls under about 0.5 us are left to the periodic cycles.
// Cost: per group and cycle, candidates + 2 calls (4 to 6; with up to three
//   candidates they fit in matex-bench's 5 warm-up calls) and two
//   MPI_Allreduce of a few doubles; then one MPI_Allreduce of three doubles
//   per window, about kWatchShare of the calls' time, and two clock reads for
//   each of the window's last kTimedWatchCalls calls.
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
  static constexpr double kDrift = 1.5;
  static constexpr uint64_t kMinWatchCalls = 2;
  static constexpr uint64_t kTimedWatchCalls = 4;  // the last calls of a window, the ones it times
  static constexpr double kWatchShare = 0.02;
  // What a window's agreement is taken to cost before one was agreed on.
  static constexpr double kFirstAgreementSeconds = 5e-6;
  enum class Agreement { kNone, kChallenger, kSettle, kWatch };
  // `watch`: whether settled groups are watched (the caller decides it alike on every rank).
  explicit AllreduceTrials(bool watch = true) : watching_(watch) {}
  // Why a watch started the trials again.
  struct Restart {
    bool drift = false;
    bool placement = false;
    double ratio = 1;  // the window's fastest call against the settled figure
  };

  // The smallest size of the group `bytes` (> 0) falls in: the caller works
  // out a group's candidates there, whichever size opens its cycle.
  static size_t group_floor(size_t bytes);
  // Whether the next call of `bytes` (> 0) is a trial.
  bool trial_due(size_t bytes) const;
  // Whether record() reads the next call's seconds: a trial's, or one of the
  // last kTimedWatchCalls of a window (two clock reads cost 15-20 % of a
  // 0.3 us call here).
  bool clock_due(size_t bytes) const;
  // The algorithm that trial runs; changes nothing. `candidates` (the rule's
  // pick first, 1 to kMaxCandidates distinct indices) is read at a cycle's
  // first call only, which runs the rule's pick.
  int trial_pick(size_t bytes, const std::vector<int>& candidates) const;
  // Records a call of `bytes` (in place or not) that ran `algorithm` in
  // `seconds` and returned on every rank; at a cycle's first call it also
  // starts the cycle with `candidates` (as given to trial_pick; with one
  // there is nothing to try and it serves the group). Says which agreement is
  // due after it: kChallenger, agree on figures() (max over ranks) and pass
  // them to choose_challenger(); kSettle, agree on figures() and pass them to
  // settle(); kWatch, agree on watch_figures() and pass them to review().
  Agreement record(size_t bytes, int algorithm, double seconds, bool in_place, const std::vector<int>& candidates);
  // This rank's fastest seconds per byte: every candidate's after round one,
  // [rule's pick, challenger, note_agreement_seconds' figure, this rank's
  // seconds in the cycle's trial calls] after round two.
  std::vector<double> figures(size_t bytes) const;
  void choose_challenger(size_t bytes, const std::vector<double>& slowest_rank_figures);
  void settle(size_t bytes, const std::vector<double>& slowest_rank_figures);
  // The caller's time for its last agreement (any group's), which a window's
  // agreement carries to size the next window.
  void note_agreement_seconds(double seconds) { last_agreement_seconds_ = seconds; }
  // This rank's window: its fastest call per byte, 1 if its last call had a
  // placement that none of its trial calls had (else 0), and
  // note_agreement_seconds' figure.
  std::vector<double> watch_figures(size_t bytes) const;
  // With the window's agreed figures (max over ranks): starts the trials
  // again at the group's next call, saying why, or opens the next window.
  std::optional<Restart> review(size_t bytes, const std::vector<double>& slowest_rank_figures);
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
    double cost_seconds = 0;          // the cycle's time beyond the choice's, with its agreements
  };
  struct Watch {
    double settled_per_byte = 0;  // the choice's agreed figure when it settled
    uint64_t window = 0;          // calls per window (0: not watching)
    uint64_t watched = 0;         // calls of the current window so far
    double fastest = -1;          // this rank's, per byte, this window
    bool moved = false;           // every timed call so far had a placement new to the cycle
    bool first = false;           // the first window after a settle
    uint64_t stretch = 1;         // doubles while watched cycles keep the choice
    bool restarted = false;       // this cycle was started by the watch
    double drift_loss = 0;        // seconds the windows in a row that drifted were off the figure
    uint64_t drift_restarts = 0;
    uint64_t placement_restarts = 0;
    uint64_t deferred_drifts = 0;  // drifted windows that did not yet cost as much as the trials
  };
  struct Group {
    uint64_t calls = 0;
    uint64_t cycle_start = 0;       // calls before this cycle's first
    Outcome cycle;                  // this cycle's, filled as it goes
    std::vector<double> fastest;    // this rank's per candidate, this cycle (negative: none yet)
    unsigned placements = 0;        // this rank's trial calls this cycle: 1 out of place, 2 in place
    double trial_seconds = 0;       // this rank's, in this cycle's trial calls
    double trial_bytes = 0;         // in this cycle's trial calls (the same on every rank)
    std::optional<Outcome> settled;  // the last settled cycle's
    std::optional<int> choice;
    Watch watch;
  };
  static int group_of(size_t bytes);
  static uint64_t position_of(const Group& group);  // of the group's next call in its cycle
  // Counts a call of the settled choice in the window, if one is open.
  static Agreement watch_call(Group& group, double per_byte, unsigned placement);
  static void open_window(Group& group, uint64_t calls);
  static bool in_timed_tail(const Watch& watch);  // the window's next call is timed
  // Calls per window for calls of `call_seconds` whose agreement takes `agreement_seconds`.
  static uint64_t window_for(double call_seconds, double agreement_seconds, uint64_t stretch);
  static size_t group_start(int group);  // the smallest size in a group
  const Group* find(size_t bytes) const;   // null: no call of its group yet
  Group& at(size_t bytes);
  // By group: 4 per power of two (floor(log2(bytes)) and the next two bits),
  // grown to the largest group seen (at most 4 * 64 entries).
  std::vector<Group> groups_;
  bool watching_;
  double last_agreement_seconds_ = kFirstAgreementSeconds;  // this rank's
  // The slowest rank's, from the last settle or window reviewed (any
  // group's): the same on every rank, so it can size a group's first window.
  double agreed_agreement_seconds_ = kFirstAgreementSeconds;
};

}  // namespace matexcomm
