// choice_rules.cc - see choice_rules.h.
#include "select/choice_rules.h"

#include <optional>

namespace matexcomm {

namespace {

// The rail family at `bytes`: single copies win while the data still sits in
// the caches. Beyond that, out of place, the kernel's copy into cold output
// lines loses to two user-space copies through L2 with streaming stores; in
// place, the output lines are the input lines just read, and single copies
// keep winning (docs/benchmarks.md). Both make the same rail calls, so nodes
// whose ranks differ in placement still agree across the rails.
int rail_algorithm(const CollectiveContext& ctx, size_t bytes, bool in_place, const AllreduceThresholds& sizes) {
  if (ctx.single_copy_ok && bytes >= sizes.single_copy_min && (in_place || bytes < sizes.single_copy_max)) {
    return kAllreduceRsArAgCma;
  }
  return kAllreduceRsArAg;
}

}  // namespace

int small_family_algorithm(const CollectiveContext& ctx) {
  return ctx.layout->node_count == 1 ? kAllreduceOneshot : kAllreduceRab;
}

bool auto_has_allreduce_choice(const CollectiveContext& ctx) {
  return ctx.hierarchical_ok && ctx.layout->world_size > 1;
}

int select_allreduce(const CollectiveContext& ctx, int forced, size_t bytes, bool in_place,
                     const AllreduceThresholds& sizes) {
  if (!ctx.hierarchical_ok || ctx.layout->world_size == 1) return kAllreduceFlat;
  if (forced != kAutoChoice) {
    const int chosen = forced;
    if (algorithm_info(MATEX_COLL_ALLREDUCE, chosen).single_copy && !ctx.single_copy_ok) return kAllreduceRsArAg;
    // oneshot serves one node; on several it would run rab, so it is rab, and
    // matex_last_algorithm says so.
    if (chosen == kAllreduceOneshot && ctx.layout->node_count > 1) return kAllreduceRab;
    return chosen;
  }
  if (!auto_has_allreduce_choice(ctx)) return kAllreduceFlat;
  if (sizes.trials != nullptr && bytes > 0) {
    if (std::optional<int> settled = sizes.trials->decided(bytes)) return *settled;
  }
  switch (auto_allreduce_family(ctx, bytes, in_place, sizes)) {
    case AllreduceFamily::kFlat: return kAllreduceFlat;
    case AllreduceFamily::kSmall: return small_family_algorithm(ctx);
    case AllreduceFamily::kRail: return rail_algorithm(ctx, bytes, in_place, sizes);
    case AllreduceFamily::kCopies: return kAllreduceRsArAg;
    case AllreduceFamily::kSingleCopy: return ctx.single_copy_ok ? kAllreduceRsArAgCma : kAllreduceRsArAg;
  }
  return kAllreduceFlat;
}

AllreduceFamily auto_allreduce_family(const CollectiveContext& ctx, size_t bytes, bool in_place,
                                      const AllreduceThresholds& sizes) {
  if (sizes.table != nullptr) return sizes.table->family_for(bytes, in_place);
  // The fixed sizes: flat with one rank per node.
  if (ctx.layout->node_count == ctx.layout->world_size) return AllreduceFamily::kFlat;
  // Several nodes, small calls: flat, which carries its data in the call
  // check (or is MPI's own call without it); rab's two shared-memory
  // hand-overs cost more than its shorter crossing saves (docs/algorithms.md).
  if (ctx.layout->node_count > 1 && bytes <= sizes.flat_max_across_nodes) return AllreduceFamily::kFlat;
  if (bytes <= sizes.rab_max) return AllreduceFamily::kSmall;
  return AllreduceFamily::kRail;
}

bool broadcast_hierarchy_helps(const CollectiveContext& ctx) {
  const topo::Layout& layout = *ctx.layout;
  return layout.node_count > 1 && layout.node_count < layout.world_size;
}

int select_broadcast(const CollectiveContext& ctx, int forced, size_t bytes, const BroadcastTable* table) {
  if (forced != kAutoChoice) return forced;
  if (!broadcast_hierarchy_helps(ctx)) return kBroadcastFlat;
  if (table != nullptr && !table->bands.empty()) return table->hierarchical_for(bytes) ? kBroadcastHier : kBroadcastFlat;
  return kBroadcastHier;
}

}  // namespace matexcomm
