// choice_rules.h - the choice of algorithm as a pure function of (message
// size, layout, configuration, the tables rank 0 broadcast at creation, the
// allreduce trials' settled choices), all of which are identical on every
// rank, so every rank picks the same algorithm without talking to the others.
// The Selector (select/selector.h) holds that state and calls these.
// Cost: a few comparisons; a table lookup walks its bands.
// Preconditions: `ctx` is the communicator's, complete (shared memory agreed).
#pragma once

#include <cstddef>
#include <string>

#include "algorithms/collective_context.h"
#include "core/algorithm_catalog.h"
#include "select/allreduce_table.h"
#include "select/allreduce_trials.h"
#include "select/broadcast_table.h"

namespace matexcomm {

// Picks the allreduce algorithm (an AllreduceId): `choice` is "auto" or a
// catalog name. Hierarchical choices fall back to flat when ctx.hierarchical_ok
// is false, single-copy ones to rs_ar_ag when ctx.single_copy_ok is false.
// Under auto, a calibrated table (allreduce_table.h) picks the family by
// size; without one (MATEX_CALIBRATE=off, or nothing to choose between) the
// fixed sizes below do: flat with one rank per node, and on several nodes up
// to flat_max_across_nodes; then up to rab_max the small family (oneshot on
// one node, rab on several); then the rail family, within which the CMA
// sizes decide. That pick (out of place) is the first contender of the
// trials, whose settled choice for the size wins (allreduce_trials.h).
struct AllreduceThresholds {
  size_t rab_max = 0;          // MATEX_RAB_MAX_BYTES
  size_t flat_max_across_nodes = 0;  // flat up to here on several nodes (kCarriedMaxBytes)
  size_t single_copy_min = 0;  // MATEX_CMA_MIN_BYTES
  size_t single_copy_max = 0;  // MATEX_CMA_MAX_BYTES
  const AllreduceTable* table = nullptr;  // the same on every rank, or null everywhere
  const AllreduceTrials* trials = nullptr;  // non-null on every rank or on none
};
// False where auto has nothing to choose and runs flat: a single rank, or no
// shared memory. With one rank per node only a measured table chooses (the
// rail family then cuts MPI's allreduce into MATEX_SHM_CHUNK_BYTES pieces,
// which can be faster); the fixed sizes run flat there.
bool auto_has_allreduce_choice(const CollectiveContext& ctx);
// The family auto runs at `bytes` (auto_has_allreduce_choice must hold).
AllreduceFamily auto_allreduce_family(const CollectiveContext& ctx, size_t bytes, bool in_place,
                                      const AllreduceThresholds& sizes);
// `forced`: kAutoChoice, or the AllreduceId that MATEX_ALLREDUCE_ALGO or
// matex_set_algorithm forced (an id, not a name: this runs on every call).
// in_place: sendbuf == recvbuf on this rank. Ranks of one node must agree on
// it for messages of MATEX_CMA_MAX_BYTES and more (else MATEX_ERR_MISMATCH).
constexpr int kAutoChoice = -1;
int select_allreduce(const CollectiveContext& ctx, int forced, size_t bytes, bool in_place,
                     const AllreduceThresholds& sizes);
// The id behind a table's small family here: oneshot on one node, rab on several.
int small_family_algorithm(const CollectiveContext& ctx);

// Whether broadcast's hierarchy can help: several nodes, some with several ranks.
bool broadcast_hierarchy_helps(const CollectiveContext& ctx);
// Broadcast (a BroadcastId): a forced choice (a BroadcastId, or
// kAutoChoice); else flat unless the hierarchy can help, where `table` (from
// a tuning file, the same on every rank) picks by `bytes`, and without one
// hier runs.
int select_broadcast(const CollectiveContext& ctx, int forced, size_t bytes, const BroadcastTable* table);

}  // namespace matexcomm
