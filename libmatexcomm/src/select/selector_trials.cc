// selector_trials.cc - the Selector's side of auto's allreduce trials
// (select/allreduce_trials.h): which calls take part, the contenders at a
// size, and the agreements after each round and each of the watch's windows.
//
// The contenders at a size, the rule's or table's pick first:
//   flat (MPI's allreduce)   on several nodes. On one node it is left out:
//                            it did not win there in the races;
//   oneshot / rab            where some node has several ranks, up to
//                            kSmallTrialMaxBytes (their cost grows with the
//                            ranks per node times the size); rab at every
//                            size across real hosts whose ranks share cores
//                            (below);
//   rs_ar_ag                 always;
//   rs_ar_ag_cma             where some node has several ranks and
//                            cross-memory attach works.
// Every input (the layout, the shared-memory and cross-memory attach status,
// the table, the thresholds, the size) is the same on every rank, so are the
// contenders. On several nodes the call check runs before each of these calls
// (the engine's calls are agreed on beforehand), so ranks whose calls differ
// fail together before any algorithm runs, and the trials' state stays the
// same on every rank.
#include <algorithm>
#include <string>
#include <vector>

#include "select/selector.h"
#include "core/error.h"
#include "core/logging.h"

namespace matexcomm {
namespace {

// oneshot and rab copy the whole message through one shared slot; on this
// project's VM they lost to the rail algorithms from 16-64 KiB on every layout.
constexpr size_t kSmallTrialMaxBytes = 64 * 1024;

}  // namespace

bool Selector::takes_trial(size_t bytes, const AllreduceHints& hints) const {
  // The cold-output hint picks rs_ar_ag (its placement may differ between ranks).
  return trials_ != nullptr && bytes > 0 && !hints.cold_output && allreduce_is_auto();
}

std::vector<int> Selector::trial_candidates(size_t bytes) const {
  // At the group's smallest size, so that the candidates do not depend on
  // which size of the group opens a cycle.
  const size_t floor = AllreduceTrials::group_floor(bytes);
  AllreduceThresholds without_trials = thresholds_;
  without_trials.trials = nullptr;
  std::vector<int> candidates{select_allreduce(context_, kAutoChoice, floor, false, without_trials)};
  const auto add = [&](int id) {
    if (std::find(candidates.begin(), candidates.end(), id) == candidates.end()) candidates.push_back(id);
  };
  const bool several_per_node = layout_.node_count < layout_.world_size;
  if (layout_.node_count > 1) add(kAllreduceFlat);
  // The rails drive one MPI stream per local rank at once. Where a host's ranks share its cores, the
  // streams contend for them (each busy-polls its sockets), and the leaders' single stream (rab) can win
  // at any size: on 2 testbed hosts of 1 core x 2 ranks, rab beat rs_ar_ag 2-3x from 1 to 64 MiB on links of
  // 5 and 10 Gbit/s, and lost by 1.3x at 64 MiB on 1 Gbit/s (docs/benchmarks.md, "Across hosts"). Only
  // the trials see the link. Virtual nodes have no link: their races never wanted rab beyond 64 KiB.
  const bool leaders_may_win = layout_.node_count > 1 && !layout_.virtual_nodes && cores_shared_anywhere_;
  if (several_per_node && (floor <= kSmallTrialMaxBytes || leaders_may_win)) add(small_family_algorithm(context_));
  add(kAllreduceRsArAg);
  if (several_per_node && context_.single_copy_ok) add(kAllreduceRsArAgCma);
  return candidates;
}

void Selector::record_allreduce(const AllreducePick& pick, size_t bytes, double seconds, bool in_place,
                                uint64_t sequence) {
  if (!pick.takes_part) return;
  switch (trials_->record(bytes, pick.algorithm, seconds, in_place, pick.candidates)) {
    case AllreduceTrials::Agreement::kNone: return;
    case AllreduceTrials::Agreement::kChallenger:
      trials_->choose_challenger(bytes, agree_on_trials(trials_->figures(bytes), sequence));
      return;
    case AllreduceTrials::Agreement::kSettle:
      trials_->settle(bytes, agree_on_trials(trials_->figures(bytes), sequence));
      return;
    case AllreduceTrials::Agreement::kWatch:
      if (const auto restart = trials_->review(bytes, agree_on_trials(trials_->watch_figures(bytes), sequence))) {
        MATEX_LOG(LogLevel::kDebug,
                  "allreduce trials: calls of " + std::to_string(bytes) + " B " +
                      (restart->drift ? "took " + std::to_string(restart->ratio) + "x the time they settled with"
                                      : std::string("moved to a placement the trials did not time")) +
                      "; timing the contenders again");
      }
  }
}

std::vector<double> Selector::agree_on_trials(const std::vector<double>& mine, uint64_t sequence) {
  // The maximum: the slowest rank's fastest call, as the calibration at init
  // and matex-tune take. Each rank times its call from its own arrival, so
  // this counts how late the others came; the minimum (the last rank to
  // arrive) undercounts more: on 1,1,1,1 the last rank into flat's recursive
  // doubling found its partners' messages waiting and took 1.4 us, where the
  // race timed the call at 11.5 us.
  // On the trials' own duplicate, so that it can never meet another
  // collective; waited for with backoff, warning once as the call check does
  // (a rank whose call failed never arrives). Both buffers are members: an
  // error below leaves the request pending.
  const double started = MPI_Wtime();
  trial_figures_ = mine;
  trial_figures_.resize(2 * mine.size());
  double* agreed = trial_figures_.data() + mine.size();
  MPI_Request request = MPI_REQUEST_NULL;
  check_mpi(MPI_Iallreduce(trial_figures_.data(), agreed, static_cast<int>(mine.size()), MPI_DOUBLE, MPI_MAX,
                           trials_comm_.get(), &request),
            "MPI_Iallreduce of the allreduce trials");
  wait_without_timeout(
      [&] {
        int done = 0;
        check_mpi(MPI_Test(&request, &done, MPI_STATUS_IGNORE), "MPI_Test of the allreduce trials");
        return done != 0;
      },
      pace_, stall_warning_seconds_, [&](double elapsed) {
        MATEX_LOG(LogLevel::kWarn, "still waiting after " + std::to_string(elapsed) +
                                       " s for every rank to agree on the allreduce trials of collective call #" +
                                       std::to_string(sequence) + "; did a rank's allreduce fail?");
      });
  trials_->note_agreement_seconds(MPI_Wtime() - started);  // sizes the watch's windows
  return std::vector<double>(agreed, agreed + mine.size());
}

}  // namespace matexcomm
