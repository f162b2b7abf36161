// selector.cc - the Selector's picks and its description (selector.h); its
// tables are made in selector_calibrate.cc and selector_tuning_file.cc, its
// trials' agreements in selector_trials.cc.
#include "select/selector.h"

#include <string>

#include "algorithms/algorithms.h"
#include "core/error.h"
#include "core/table_text.h"
#include "topology/hardware.h"

namespace matexcomm {

namespace {

// The id behind a choice of `coll`, or kAutoChoice; an unknown name (never
// passed: the config table and matex_set_algorithm check it) gives `unknown`:
// flat for allreduce, auto for broadcast, as when the names were compared.
int forced_id(matex_collective_t coll, const std::string& choice, int unknown) {
  if (choice == "auto") return kAutoChoice;
  const int id = find_algorithm(coll, choice);
  return id < 0 ? unknown : id;
}

size_t index_of(matex_collective_t coll) {
  const int index = static_cast<int>(coll);
  MATEX_REQUIRE(index >= 0 && index < 4, MATEX_ERR_INVALID_ARG,
                "coll = " + std::to_string(index) + " has no algorithm choice");
  return static_cast<size_t>(index);
}

}  // namespace

Selector::Selector(const Setup& setup)
    : config_(*setup.config),
      context_(*setup.context),
      layout_(*setup.context->layout),
      world_(setup.world),
      cores_shared_anywhere_(setup.cores_shared_anywhere),
      stall_warning_seconds_(setup.stall_warning_seconds),
      pace_(setup.pace) {
  thresholds_.rab_max = config_.get_bytes("MATEX_RAB_MAX_BYTES");
  thresholds_.flat_max_across_nodes = setup.flat_max_across_nodes;
  thresholds_.single_copy_min = config_.get_bytes("MATEX_CMA_MIN_BYTES");
  thresholds_.single_copy_max = config_.get_bytes("MATEX_CMA_MAX_BYTES");
  for (std::string& choice : choice_) choice = "auto";
  choice_[MATEX_COLL_ALLREDUCE] = config_.get_string("MATEX_ALLREDUCE_ALGO");
  allreduce_forced_ = forced_id(MATEX_COLL_ALLREDUCE, choice_[MATEX_COLL_ALLREDUCE], kAllreduceFlat);
}

Selector::~Selector() = default;

void Selector::start(const AllreduceCall& call) {
  calibrate(call);
  if (config_.get_bool("MATEX_ALLREDUCE_TRIALS") && config_.get_string("MATEX_CALIBRATE") != "off" &&
      auto_has_allreduce_choice(context_)) {
    trials_ = std::make_unique<AllreduceTrials>(watches_trials());
    thresholds_.trials = trials_.get();
    trials_comm_ = UniqueComm::duplicate(world_);
  }
}

bool Selector::watches_trials() const {
  // The watch guards choices whose speed turns on where a node's ranks sit:
  // only where some node has several, each with a core of its own. Ranks
  // that share cores have no stable placement to guard, and their agreements
  // cost the most: on 4 ranks on 2 cores it lost 9-10 rows of 160 per race on
  // 1,1,1,1 and up to 14 on 2,2 and 3,1 together (docs/algorithms.md, "The watch").
  return layout_.node_count < layout_.world_size && !cores_shared_anywhere_;
}

const std::string& Selector::choice(matex_collective_t coll) const { return choice_[index_of(coll)]; }

void Selector::set_choice(matex_collective_t coll, const std::string& name) {
  choice_[index_of(coll)] = name;
  if (coll == MATEX_COLL_ALLREDUCE) allreduce_forced_ = forced_id(coll, name, kAllreduceFlat);
  if (coll == MATEX_COLL_BROADCAST) broadcast_forced_ = forced_id(coll, name, kAutoChoice);
}

Selector::AllreducePick Selector::pick_allreduce(size_t bytes, bool in_place, const AllreduceHints& hints) const {
  AllreducePick pick;
  pick.algorithm = select_allreduce(context_, allreduce_forced_, bytes, in_place, thresholds_);
  // The hint picks rs_ar_ag whatever the placement, so that ranks whose engines
  // differ in placement (prescale, MATEX_IN_PLACE) still choose alike.
  if (hints.cold_output && allreduce_is_auto() && algorithm_info(MATEX_COLL_ALLREDUCE, pick.algorithm).single_copy) {
    pick.algorithm = kAllreduceRsArAg;
  }
  // Between trials select_allreduce already returned the settled choice; a
  // trial call runs the trial's pick.
  pick.takes_part = takes_trial(bytes, hints);
  if (pick.takes_part && trials_->trial_due(bytes)) {
    pick.candidates = trial_candidates(bytes);
    pick.algorithm = trials_->trial_pick(bytes, pick.candidates);
  }
  pick.clocked = pick.takes_part && trials_->clock_due(bytes);  // trials, and the watch's timed calls
  return pick;
}

int Selector::auto_allreduce(size_t bytes, bool in_place) const {
  return select_allreduce(context_, kAutoChoice, bytes, in_place, thresholds_);
}

bool Selector::fuses_without_copies() const {
  return context_.hierarchical_ok && layout_.node_count < layout_.world_size &&
         (allreduce_forced_ == kAutoChoice || allreduce_forced_ == kAllreduceRsArAg);
}

int Selector::pick_broadcast(size_t bytes) const {
  return select_broadcast(context_, broadcast_forced_, bytes, broadcast_table_.get());
}

bool Selector::reduce_is_hierarchical() const { return reduce_prefers_hierarchy(context_); }

const char* Selector::auto_algorithm(matex_collective_t coll, size_t bytes) const {
  switch (coll) {
    case MATEX_COLL_ALLREDUCE:
      return algorithm_info(coll, select_allreduce(context_, allreduce_forced_, bytes, false,
                                                   thresholds_)).name;
    case MATEX_COLL_BROADCAST: return algorithm_info(coll, pick_broadcast(bytes)).name;
    case MATEX_COLL_ALLGATHER:
    case MATEX_COLL_REDUCE_SCATTER: return "flat";
    case MATEX_COLL_REDUCE: return reduce_is_hierarchical() ? "hier" : "flat";
  }
  MATEX_RAISE(MATEX_ERR_INVALID_ARG, "coll = " + std::to_string(static_cast<int>(coll)) +
                                         " is not a matex_collective_t");
}

TuningIdentity Selector::tuning_identity() const {
  return {MATEX_VERSION_STRING, topo::host_kind(), layout_shape()};
}

std::string Selector::layout_shape() const {
  std::string shape = "p=" + std::to_string(layout_.world_size) + ";nodes=";
  for (int size : layout_.node_sizes) shape += std::to_string(size) + ",";
  shape += ";hier=" + std::to_string(context_.hierarchical_ok) + ";cma=" + std::to_string(context_.single_copy_ok) +
           ";shared=" + std::to_string(cores_shared_anywhere_) + ";chunk=" + std::to_string(context_.chunk_bytes) +
           ";cma_min=" + std::to_string(thresholds_.single_copy_min) +
           ";cma_max=" + std::to_string(thresholds_.single_copy_max);
  return shape;
}

std::string Selector::describe() const {
  const std::string& choice = choice_[MATEX_COLL_ALLREDUCE];
  std::string text;
  if (choice != "auto") {
    text = "allreduce: forced to " + choice + " (MATEX_ALLREDUCE_ALGO or matex_set_algorithm)\n";
  } else if (thresholds_.table != nullptr) {
    text = thresholds_.table->explain();
  } else {
    const bool one_per_node = layout_.node_count == layout_.world_size;
    text = !auto_has_allreduce_choice(context_)
               ? "allreduce under auto: flat (one rank, or no shared memory)\n"
           : one_per_node
               ? "allreduce under auto: flat (one rank per node, and no measured table)\n"
               : "allreduce under auto: fixed sizes (no measured table: no tuning file under MATEX_CALIBRATE=auto, "
                 "or off, or allreduce was forced when the communicator was created): " +
                     (layout_.node_count == 1
                          ? "oneshot up to " + std::to_string(thresholds_.rab_max)
                          : "flat up to " + std::to_string(thresholds_.flat_max_across_nodes) +
                                (thresholds_.rab_max > thresholds_.flat_max_across_nodes
                                     ? " B, rab up to " + std::to_string(thresholds_.rab_max)
                                     : std::string())) +
                     " B, then rs_ar_ag, or rs_ar_ag_cma from " +
                     std::to_string(thresholds_.single_copy_min) + " B (out of place below " +
                     std::to_string(thresholds_.single_copy_max) + " B)\n";
  }
  if (choice == "auto" && trials_ != nullptr) {
    text += "  then trials on the caller's calls, per size group (four per power of two): each contender once, "
            "then the fastest other and the pick above once more; the other serves the group if its fastest call "
            "on the slowest rank was " + std::to_string(static_cast<int>(AllreduceTrials::kMargin * 100)) +
            " % faster; timed again every " + std::to_string(AllreduceTrials::kCallsPerCycle) + " calls" +
            (watches_trials()
                 ? ", and at once when a window of the choice's calls ran " + factor(AllreduceTrials::kDrift) +
                       "x off its figure (once such windows in a row cost as much as the trials) or moved to a placement the "
                       "trials did not time"
                 : std::string()) +
            " (MATEX_ALLREDUCE_TRIALS)";
    const std::string settled =
        trials_->explain([](int id) { return algorithm_info(MATEX_COLL_ALLREDUCE, id).name; });
    text += settled.empty() ? "; none settled yet\n" : "; settled so far (the slowest rank's fastest call):\n" + settled;
  }
  const std::string& broadcast_choice = choice_[MATEX_COLL_BROADCAST];
  if (broadcast_choice != "auto") {
    text += "broadcast: forced to " + broadcast_choice + " (matex_set_algorithm)\n";
  } else if (broadcast_table_ != nullptr) {
    text += broadcast_table_->explain();
  } else {
    text += std::string("broadcast under auto: ") +
            (broadcast_hierarchy_helps(context_)
                 ? "hier (several nodes, some with several ranks; no tuning file timed it)\n"
                 : "flat\n");
  }
  text += "allgather, reduce_scatter: flat\n";
  return text;
}

}  // namespace matexcomm
