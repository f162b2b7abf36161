// selector.h - which algorithm runs: one Selector per communicator.
//
// The communicator asks it before a collective (pick_*) and tells it after
// an allreduce that took part in the trials (record_allreduce); it knows
// nothing of how the choice is made. The Selector owns everything that
// decides:
//   - the forced choices (MATEX_ALLREDUCE_ALGO, matex_set_algorithm);
//   - the fixed sizes (MATEX_RAB_MAX_BYTES, MATEX_CMA_MIN/MAX_BYTES; choice_rules.h);
//   - auto's tables: measured at creation (selector_calibrate.cc), or from a
//     tuning file (selector_tuning_file.cc), or rank 0's earlier ones;
//   - the allreduce trials on the caller's calls, and their watch
//     (allreduce_trials.h; the agreements: selector_trials.cc).
// Every input of a choice is the same on every rank, so every rank picks the
// same algorithm without talking to the others; the trials' agreements are
// the only traffic, on a duplicate of their own.
// Cost: a pick is a few comparisons and, under a table, a walk of its bands.
// Preconditions: the communicator's context is complete (shared memory
//   agreed, chunk size chosen) before the Selector is made, and outlives it.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "algorithms/collective_context.h"
#include "core/backoff.h"
#include "core/config.h"
#include "core/mpi_handles.h"
#include "core/tuning_file.h"
#include "select/allreduce_table.h"
#include "select/allreduce_trials.h"
#include "select/broadcast_table.h"
#include "select/choice_rules.h"

namespace matexcomm {

// What a caller inside the library knows about an allreduce's buffers.
struct AllreduceHints {
  // The output is large and not in cache (the engine's unfused tensors): where
  // auto would run rs_ar_ag_cma, run rs_ar_ag (in place too, so that placement
  // never changes the choice), and out
  // of place write with streaming stores rather than the kernel's single copies,
  // which read every cold output line before writing it.
  bool cold_output = false;
};

class Selector {
 public:
  // What the communicator knows when it makes its Selector.
  struct Setup {
    const Config* config = nullptr;
    const CollectiveContext* context = nullptr;
    MPI_Comm world = MPI_COMM_NULL;  // the communicator's private duplicate
    bool cores_shared_anywhere = false;  // some host has more ranks than cores (the same on every rank)
    size_t flat_max_across_nodes = 0;    // flat up to here on several nodes (the call check carries it)
    double stall_warning_seconds = 60;   // warn once while a trials agreement waits this long
    BackoffPace pace = BackoffPace::for_shared_cores();
  };
  explicit Selector(const Setup& setup);
  ~Selector();
  Selector(const Selector&) = delete;
  Selector& operator=(const Selector&) = delete;

  // One allreduce of `bytes` (float32 sums, out of place) through the
  // communicator, for the calibration to time: the Selector makes auto run
  // the family it times meanwhile.
  using AllreduceCall = std::function<void(size_t bytes, float* send, float* recv)>;
  // Collective, the communicator's last step of creation: auto's tables
  // (measured with `call`, read from a tuning file, or rank 0's earlier ones
  // for the same shape), then the trials where they run.
  void start(const AllreduceCall& call);

  // "auto" or a catalog name: MATEX_ALLREDUCE_ALGO at first, then
  // matex_set_algorithm's, which the communicator has checked and agreed on.
  const std::string& choice(matex_collective_t coll) const;
  void set_choice(matex_collective_t coll, const std::string& name);
  bool allreduce_is_auto() const { return allreduce_forced_ == kAutoChoice; }

  // An allreduce's algorithm, and what the trials need to hear of the call.
  struct AllreducePick {
    int algorithm = kAllreduceFlat;  // an AllreduceId
    bool takes_part = false;  // record_allreduce after the call
    bool clocked = false;     // time the call for record_allreduce
    std::vector<int> candidates;  // a trial's contenders (empty between trials)
  };
  AllreducePick pick_allreduce(size_t bytes, bool in_place, const AllreduceHints& hints) const;
  // After a call that took part returned on this rank: counts it, and after a
  // round of trials or a window of the watch agrees with every rank on the
  // figures (collective then; `sequence` names the call in a stall warning).
  // Throws if the agreement fails: the trials could then differ between ranks.
  void record_allreduce(const AllreducePick& pick, size_t bytes, double seconds, bool in_place, uint64_t sequence);
  // What auto runs for `bytes` without a trial (settled choices count).
  int auto_allreduce(size_t bytes, bool in_place) const;
  // True (the same on every rank) when fused pieces can go to rs_ar_ag as
  // they are (Communicator::fuses_without_copies).
  bool fuses_without_copies() const;
  int pick_broadcast(size_t bytes) const;  // a BroadcastId
  // Reduce has no choice to make: the layout decides (reduce_prefers_hierarchy).
  bool reduce_is_hierarchical() const;
  // The name of what runs for `bytes` on host buffers (matex_auto_algorithm).
  const char* auto_algorithm(matex_collective_t coll, size_t bytes) const;
  // How auto chooses, in lines of text (matex_describe_selection).
  std::string describe() const;
  // What a tuning file must have been measured for to serve this
  // communicator (matex_tuning_identity); loads the hwloc topology.
  TuningIdentity tuning_identity() const;

 private:
  // What a table depends on: ranks per node, shared memory, single copies, sizes.
  std::string layout_shape() const;
  bool watches_trials() const;
  // selector_calibrate.cc
  void calibrate(const AllreduceCall& call);
  AllreduceTable measure_allreduce_table(const AllreduceCall& call);
  double time_family(const AllreduceTable& only, size_t bytes, float* send, float* recv, const AllreduceCall& call);
  // selector_tuning_file.cc: collective; true on every rank when rank 0's
  // tuning file fits and `table` (rank 0's) holds it, and `broadcast` (rank
  // 0's) the file's broadcast bands where the hierarchy can help.
  // `optional` (auto): a missing file is no warning.
  bool load_tuning_table(AllreduceTable* table, BroadcastTable* broadcast, bool optional);
  AllreduceTable table_from_tuning(const TuningFile& file) const;
  BroadcastTable broadcast_table_from_tuning(const TuningFile& file) const;
  // selector_trials.cc
  bool takes_trial(size_t bytes, const AllreduceHints& hints) const;
  std::vector<int> trial_candidates(size_t bytes) const;
  std::vector<double> agree_on_trials(const std::vector<double>& mine, uint64_t sequence);

  const Config& config_;
  const CollectiveContext& context_;
  const topo::Layout& layout_;
  MPI_Comm world_;
  bool cores_shared_anywhere_;
  double stall_warning_seconds_;
  BackoffPace pace_;
  std::string choice_[4];
  int allreduce_forced_ = kAutoChoice;  // choice_[MATEX_COLL_ALLREDUCE] as an id, read on every call
  int broadcast_forced_ = kAutoChoice;  // choice_[MATEX_COLL_BROADCAST] as an id
  AllreduceThresholds thresholds_;
  std::shared_ptr<const AllreduceTable> allreduce_table_;  // thresholds_.table's owner, or null
  std::shared_ptr<const BroadcastTable> broadcast_table_;  // from a tuning file, or null (the fixed rule)
  // Times auto's contenders on the caller's calls (MATEX_ALLREDUCE_TRIALS,
  // not under MATEX_CALIBRATE=off); thresholds_.trials points here.
  std::unique_ptr<AllreduceTrials> trials_;
  UniqueComm trials_comm_;  // the trials' agreements, alone on it (null without trials)
  std::vector<double> trial_figures_;  // an agreement's buffers: they outlive a request an error left pending
};

}  // namespace matexcomm
