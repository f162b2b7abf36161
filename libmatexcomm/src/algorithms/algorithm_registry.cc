// algorithm_registry.cc - names of the algorithms and the size-based choice.
#include "algorithms/algorithms.h"

#include <optional>

namespace matexcomm {

const std::vector<AllreduceAlgorithm>& allreduce_registry() {
  static const std::vector<AllreduceAlgorithm> kRegistry = {
      {"flat", allreduce_flat, false, false},
      {"rs_ar_ag", allreduce_rs_ar_ag, true, false},
      {"rab", allreduce_rab, true, false},
      {"rs_ar_ag_cma", allreduce_rs_ar_ag_cma, true, true},
      {"oneshot", allreduce_oneshot, true, false},
  };
  return kRegistry;
}

int find_allreduce(const std::string& name) {
  const auto& registry = allreduce_registry();
  for (size_t i = 0; i < registry.size(); ++i) {
    if (name == registry[i].name) return static_cast<int>(i);
  }
  return -1;
}

std::vector<std::string> algorithm_names(matex_collective_t coll) {
  switch (coll) {
    case MATEX_COLL_ALLREDUCE: {
      std::vector<std::string> names = {"auto"};
      for (const auto& algorithm : allreduce_registry()) names.push_back(algorithm.name);
      return names;
    }
    case MATEX_COLL_BROADCAST: return {"auto", "flat", "hier"};
    case MATEX_COLL_ALLGATHER: return {"auto", "flat"};
    case MATEX_COLL_REDUCE_SCATTER: return {"auto", "flat"};
    case MATEX_COLL_REDUCE: return {};  // no choice: the layout decides
  }
  return {};
}

namespace {

// Registry indices of the algorithms auto chooses from, looked up once.
struct KnownAllreduces {
  int flat = find_allreduce("flat");
  int rs_ar_ag = find_allreduce("rs_ar_ag");
  int rab = find_allreduce("rab");
  int oneshot = find_allreduce("oneshot");
  int single_copy = find_allreduce("rs_ar_ag_cma");
};

const KnownAllreduces& known() {
  static const KnownAllreduces instance;
  return instance;
}

// The rail family at `bytes`: single copies win while the data still sits in
// the caches. Beyond that, out of place, the kernel's copy into cold output
// lines loses to two user-space copies through L2 with streaming stores; in
// place, the output lines are the input lines just read, and single copies
// keep winning (docs/benchmarks.md). Both make the same rail calls, so nodes
// whose ranks differ in placement still agree across the rails.
int rail_algorithm(const CollectiveContext& ctx, size_t bytes, bool in_place, const AllreduceThresholds& sizes) {
  const KnownAllreduces& k = known();
  if (ctx.single_copy_ok && bytes >= sizes.single_copy_min && (in_place || bytes < sizes.single_copy_max)) {
    return k.single_copy;
  }
  return k.rs_ar_ag;
}

}  // namespace

const char* small_family_algorithm(const CollectiveContext& ctx) {
  return ctx.layout->node_count == 1 ? "oneshot" : "rab";
}

const char* rail_family_algorithm(const CollectiveContext& ctx, size_t bytes, bool in_place,
                                  const AllreduceThresholds& sizes) {
  return allreduce_registry()[rail_algorithm(ctx, bytes, in_place, sizes)].name;
}

bool auto_has_allreduce_choice(const CollectiveContext& ctx) {
  return ctx.hierarchical_ok && ctx.layout->world_size > 1;
}

int select_allreduce(const CollectiveContext& ctx, const std::string& choice, size_t bytes, bool in_place,
                     const AllreduceThresholds& sizes) {
  const KnownAllreduces& k = known();
  const int flat = k.flat;
  if (!ctx.hierarchical_ok || ctx.layout->world_size == 1) return flat;
  if (choice != "auto") {
    int chosen = find_allreduce(choice);
    if (chosen < 0) return flat;
    if (allreduce_registry()[chosen].single_copy && !ctx.single_copy_ok) return k.rs_ar_ag;
    // oneshot serves one node; on several it would run rab, so it is rab, and
    // matex_last_algorithm says so.
    if (chosen == k.oneshot && ctx.layout->node_count > 1) return k.rab;
    return chosen;
  }
  if (!auto_has_allreduce_choice(ctx)) return flat;
  if (sizes.trials != nullptr && bytes > 0) {
    if (std::optional<int> settled = sizes.trials->decided(bytes)) return *settled;
  }
  const AllreduceFamily family = auto_allreduce_family(ctx, bytes, in_place, sizes);
  switch (family) {
    case AllreduceFamily::kFlat: return flat;
    case AllreduceFamily::kSmall: return ctx.layout->node_count == 1 ? k.oneshot : k.rab;
    case AllreduceFamily::kRail: return rail_algorithm(ctx, bytes, in_place, sizes);
    case AllreduceFamily::kCopies: return k.rs_ar_ag;
    case AllreduceFamily::kSingleCopy: return ctx.single_copy_ok ? k.single_copy : k.rs_ar_ag;
  }
  return flat;
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

std::string select_broadcast(const CollectiveContext& ctx, const std::string& choice, size_t bytes,
                             const BroadcastTable* table) {
  if (choice == "flat" || choice == "hier") return choice;
  if (!broadcast_hierarchy_helps(ctx)) return "flat";
  if (table != nullptr && !table->bands.empty()) return table->hierarchical_for(bytes) ? "hier" : "flat";
  return "hier";
}

}  // namespace matexcomm
