// thread_budget.cc - per-rank CPU blocks and thread counts (see thread_budget.h).
//
// Cost: an MPI_Allreduce agreeing that every rank got its facts, then (unless
// MATEX_THREADS=off) one MPI_Allreduce and one MPI_Allgather of a PU bitmap per rank (a few
// bytes per 64 PUs), one hwloc topology load without I/O discovery, and the
// split, O(ranks on the host ^ 2 * PUs). budget_table adds one MPI_Gather of a
// fixed 96-byte record per rank.
// Preconditions: `layout` was discovered over `comm`; every rank of `comm`
// calls, with the same setting (MATEX_THREADS is checked alike by config
// agreement like every same-on-all-ranks setting).
#include "topology/thread_budget.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <numeric>
#include <set>

#include "core/error.h"
#include "topology/index_list.h"
#include "topology/hardware.h"

namespace matexcomm::topo {

namespace {

bool intersects(const std::vector<int>& a, const std::vector<int>& b) {
  std::set<int> left(a.begin(), a.end());
  return std::any_of(b.begin(), b.end(), [&](int pu) { return left.count(pu) != 0; });
}

struct CoreIndex {
  std::map<int, int> core_of_pu;  // PU OS index -> position in `cores`
  int core_of(int pu) const {
    auto found = core_of_pu.find(pu);
    return found == core_of_pu.end() ? -1 - pu : found->second;  // a PU hwloc did not report: its own core
  }
  int count_cores(const std::vector<int>& pus) const {
    std::set<int> distinct;
    for (int pu : pus) distinct.insert(core_of(pu));
    return static_cast<int>(distinct.size());
  }
};

void size_pools(ThreadBudget& budget) {
  if (budget.shared) {
    budget.intra_op = budget.inter_op = 1;
    return;
  }
  budget.intra_op = std::max(1, budget.cores);
  budget.inter_op = budget.cores <= 4 ? 1 : 2;
}

// The overlap groups: ranks linked by any chain of overlapping masks.
std::vector<std::vector<size_t>> overlap_groups(const std::vector<std::vector<int>>& masks) {
  std::vector<size_t> group(masks.size());
  std::iota(group.begin(), group.end(), 0);
  auto root = [&](size_t i) {
    while (group[i] != i) i = group[i] = group[group[i]];
    return i;
  };
  for (size_t i = 0; i < masks.size(); ++i) {
    for (size_t j = i + 1; j < masks.size(); ++j) {
      if (intersects(masks[i], masks[j])) group[root(j)] = root(i);
    }
  }
  std::map<size_t, std::vector<size_t>> members;
  for (size_t i = 0; i < masks.size(); ++i) members[root(i)].push_back(i);
  std::vector<std::vector<size_t>> groups;
  for (auto& entry : members) groups.push_back(entry.second);
  return groups;
}

// The group's cores, in topology order, as the PUs of each that the group's masks cover.
std::vector<std::vector<int>> cores_covered(const std::set<int>& covered, const std::vector<std::vector<int>>& cores,
                                            const CoreIndex& index) {
  std::vector<std::vector<int>> group_cores;
  for (const std::vector<int>& core : cores) {
    std::vector<int> mine;
    for (int pu : core) {
      if (covered.count(pu)) mine.push_back(pu);
    }
    if (!mine.empty()) group_cores.push_back(mine);
  }
  for (int pu : covered) {
    if (index.core_of(pu) < 0) group_cores.push_back({pu});
  }
  return group_cores;
}

// Whole cores to the ranks of one overlap group: each rank's quota (an even
// share in rank order, or cores_per_rank) from the free cores its own mask
// covers, lowest first, the ranks with the narrowest masks choosing first, so
// that a rank confined to few cores still gets them. Cores left over go to the
// ranks (that can use them) with the fewest. A rank that finds no free core
// shares the least-used core of its mask.
void split_group(const std::vector<size_t>& members, const std::vector<std::vector<int>>& masks,
                 const std::vector<std::vector<int>>& cores, const CoreIndex& index, int cores_per_rank,
                 std::vector<ThreadBudget>& budgets) {
  std::set<int> covered;
  for (size_t k : members) covered.insert(masks[k].begin(), masks[k].end());
  const std::vector<std::vector<int>> group_cores = cores_covered(covered, cores, index);
  const size_t c = group_cores.size();
  const size_t m = members.size();
  std::vector<std::set<int>> own(m);
  std::vector<size_t> quota(m);
  for (size_t k = 0; k < m; ++k) {
    own[k] = std::set<int>(masks[members[k]].begin(), masks[members[k]].end());
    if (cores_per_rank > 0) {
      quota[k] = static_cast<size_t>(cores_per_rank);
    } else {
      quota[k] = c >= m ? (k + 1) * c / m - k * c / m : (k < c ? 1 : 0);  // fewer cores: one each, round-robin
    }
  }
  auto usable = [&](size_t k, size_t core) {
    return std::any_of(group_cores[core].begin(), group_cores[core].end(), [&](int pu) { return own[k].count(pu); });
  };
  std::vector<size_t> order(m);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return own[a].size() < own[b].size(); });
  std::vector<int> users(c, 0);
  std::vector<std::vector<size_t>> chosen(m);
  for (size_t k : order) {
    for (size_t core = 0; core < c && chosen[k].size() < quota[k]; ++core) {
      if (users[core] == 0 && usable(k, core)) {
        chosen[k].push_back(core);
        ++users[core];
      }
    }
  }
  if (cores_per_rank <= 0) {
    for (size_t core = 0; core < c; ++core) {  // cores nobody took: to the usable rank with the fewest
      if (users[core] != 0) continue;
      size_t best = m;
      for (size_t k = 0; k < m; ++k) {
        if (usable(k, core) && (best == m || chosen[k].size() < chosen[best].size())) best = k;
      }
      if (best != m) {
        chosen[best].push_back(core);
        ++users[core];
      }
    }
  }
  for (size_t k = 0; k < m; ++k) {
    ThreadBudget& budget = budgets[members[k]];
    if (chosen[k].empty()) {  // more ranks than cores: the least-used core it may run on
      size_t best = c;
      for (size_t core = 0; core < c; ++core) {
        if (usable(k, core) && (best == c || users[core] < users[best])) best = core;
      }
      if (best != c) {
        chosen[k].push_back(best);
        ++users[best];
      }
    }
    for (size_t core : chosen[k]) {
      for (int pu : group_cores[core]) {
        if (own[k].count(pu)) budget.pus.push_back(pu);  // never a PU the rank's own mask lacks
      }
    }
    std::sort(budget.pus.begin(), budget.pus.end());
    if (budget.pus.empty()) budget.pus = masks[members[k]];
    budget.narrowed = budget.pus.size() < own[k].size();
  }
  for (size_t k = 0; k < m; ++k) {
    for (size_t core : chosen[k]) budgets[members[k]].shared = budgets[members[k]].shared || users[core] > 1;
  }
}

}  // namespace

std::string format_cpu_list(const std::vector<int>& pus) { return format_index_list(pus); }

int parse_threads_setting(const std::string& setting) {
  if (setting.empty() || setting == "auto") return kThreadsAuto;
  if (setting == "off") return kThreadsOff;
  char* end = nullptr;
  long value = std::strtol(setting.c_str(), &end, 10);
  MATEX_REQUIRE(std::isdigit(static_cast<unsigned char>(setting[0])) && *end == '\0' && value > 0 && value <= 1 << 20,
                MATEX_ERR_CONFIG,
                "MATEX_THREADS=\"" + setting + "\": expected auto, off or a positive number of cores per rank");
  return static_cast<int>(value);
}

std::vector<ThreadBudget> split_host_affinities(const std::vector<std::vector<int>>& masks,
                                                const std::vector<std::vector<int>>& cores,
                                                int cores_per_rank) {
  CoreIndex index;
  for (size_t c = 0; c < cores.size(); ++c) {
    for (int pu : cores[c]) index.core_of_pu[pu] = static_cast<int>(c);
  }
  std::vector<ThreadBudget> budgets(masks.size());
  for (const std::vector<size_t>& members : overlap_groups(masks)) {
    if (members.size() == 1 && cores_per_rank <= 0) {
      budgets[members[0]].pus = masks[members[0]];  // already apart from every other rank: kept
      std::sort(budgets[members[0]].pus.begin(), budgets[members[0]].pus.end());
    } else {
      split_group(members, masks, cores, index, cores_per_rank, budgets);
    }
  }
  const int host_cores = static_cast<int>(cores.size());
  const int fair_share = masks.empty() ? 0 : host_cores / static_cast<int>(masks.size());
  for (ThreadBudget& budget : budgets) {
    budget.cores = index.count_cores(budget.pus);
    budget.starved = !budget.narrowed && !budget.shared && fair_share >= 2 && budget.cores < fair_share;
    size_pools(budget);
  }
  return budgets;
}

std::vector<int> affinity_of_thread(pid_t thread) {
  long configured = sysconf(_SC_NPROCESSORS_CONF);
  const int capacity = static_cast<int>(std::max<long>(configured, 1024));
  std::unique_ptr<cpu_set_t, void (*)(cpu_set_t*)> set(CPU_ALLOC(capacity), [](cpu_set_t* s) { CPU_FREE(s); });
  MATEX_REQUIRE(set != nullptr, MATEX_ERR_SYSTEM, "CPU_ALLOC failed");
  const size_t bytes = CPU_ALLOC_SIZE(capacity);
  CPU_ZERO_S(bytes, set.get());
  MATEX_REQUIRE(sched_getaffinity(thread, bytes, set.get()) == 0, MATEX_ERR_SYSTEM,
                std::string("sched_getaffinity failed: ") + std::strerror(errno));
  std::vector<int> pus;
  for (int pu = 0; pu < capacity; ++pu) {
    if (CPU_ISSET_S(pu, bytes, set.get())) pus.push_back(pu);
  }
  return pus;
}

namespace {

// Collective: raises on every rank when `failure` is not empty on some rank,
// so that no rank goes on to an exchange the failed one will not join.
void agree(MPI_Comm comm, const std::string& failure) {
  int ok = failure.empty() ? 1 : 0;
  int all_ok = 0;
  check_mpi(MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, comm), "MPI_Allreduce (thread budget agreement)");
  if (all_ok == 0) {
    MATEX_RAISE(MATEX_ERR_SYSTEM, failure.empty() ? "the thread budget failed on another rank" : failure);
  }
}

}  // namespace

ThreadBudget budget_threads(MPI_Comm comm, const Layout& layout, const std::string& setting) {
  int mode = kThreadsAuto;
  std::vector<int> mine;
  std::vector<std::vector<int>> cores;
  std::string failure;
  try {  // everything that can fail here, before any exchange
    mode = parse_threads_setting(setting);
    mine = affinity_of_thread(0);
    cores = pus_of_cores();
  } catch (const Error& error) {
    failure = error.message();
  }
  agree(comm, failure);
  if (mode == kThreadsOff) {  // the same on every rank: no exchange needed; its own affinity, described
    ThreadBudget kept = split_host_affinities({mine}, cores, kThreadsAuto)[0];
    kept.intra_op = kept.inter_op = 0;  // the framework's defaults
    kept.starved = false;
    return kept;
  }
  int highest = mine.empty() ? 0 : mine.back();
  int words_needed = highest / 64 + 1;
  int words = 0;
  check_mpi(MPI_Allreduce(&words_needed, &words, 1, MPI_INT, MPI_MAX, comm), "MPI_Allreduce (affinity size)");
  std::vector<uint64_t> bitmap(words, 0);
  for (int pu : mine) bitmap[pu / 64] |= uint64_t{1} << (pu % 64);
  std::vector<uint64_t> all(static_cast<size_t>(words) * layout.world_size);
  check_mpi(MPI_Allgather(bitmap.data(), words, MPI_UINT64_T, all.data(), words, MPI_UINT64_T, comm),
            "MPI_Allgather (affinities)");
  const std::string& my_host = layout.node_hosts[layout.node_index];
  std::vector<std::vector<int>> masks;
  size_t me = 0;
  for (int r = 0; r < layout.world_size; ++r) {
    if (layout.node_hosts[layout.node_of_rank[r]] != my_host) continue;
    if (r == layout.world_rank) me = masks.size();
    std::vector<int> pus;
    for (int w = 0; w < words; ++w) {
      for (int b = 0; b < 64; ++b) {
        if (all[static_cast<size_t>(r) * words + w] >> b & 1) pus.push_back(w * 64 + b);
      }
    }
    masks.push_back(pus);
  }
  return split_host_affinities(masks, cores, mode)[me];
}

namespace {

struct BudgetRecord {
  int32_t node, cores, intra, inter, flags, reserved;
  char pus[72];
};
static_assert(sizeof(BudgetRecord) == 96, "sent as raw bytes");
constexpr int kNarrowed = 1, kShared = 2, kStarved = 4;

}  // namespace

std::string budget_table(MPI_Comm comm, int root, const Layout& layout, const ThreadBudget& mine,
                         const std::string& setting) {
  BudgetRecord record{};
  record.node = layout.node_index;
  record.cores = mine.cores;
  record.intra = mine.intra_op;
  record.inter = mine.inter_op;
  record.flags = (mine.narrowed ? kNarrowed : 0) | (mine.shared ? kShared : 0) | (mine.starved ? kStarved : 0);
  std::string pus = format_index_list(mine.pus);
  if (pus.size() >= sizeof(record.pus)) pus = pus.substr(0, sizeof(record.pus) - 4) + "...";
  std::memcpy(record.pus, pus.c_str(), pus.size() + 1);
  std::vector<BudgetRecord> all(layout.world_rank == root ? layout.world_size : 0);
  check_mpi(MPI_Gather(&record, sizeof(record), MPI_BYTE, all.data(), sizeof(record), MPI_BYTE, root, comm),
            "MPI_Gather (thread budgets)");
  if (layout.world_rank != root) return {};
  std::string text = "thread budget per rank (MATEX_THREADS=" + (setting.empty() ? "auto" : setting) + ")\n";
  char line[200];
  std::snprintf(line, sizeof(line), "%5s %5s %-16s %5s %5s %5s  %s\n", "rank", "node", "cpus", "cores", "intra",
                "inter", "notes");
  text += line;
  for (int r = 0; r < layout.world_size; ++r) {
    const BudgetRecord& b = all[r];
    std::string notes = b.flags & kNarrowed ? "bound here" : (b.intra == 0 ? "as launched, TF defaults" : "as launched");
    if (b.flags & kShared) notes += ", shares cores (more ranks than cores)";
    if (b.flags & kStarved) notes += ", fewer cores than its share: launch with --bind-to none or --map-by slot:PE=<n>";
    std::snprintf(line, sizeof(line), "%5d %5d %-16s %5d %5d %5d  %s\n", r, b.node, b.pus, b.cores, b.intra,
                  b.inter, notes.c_str());
    text += line;
  }
  return text;
}

}  // namespace matexcomm::topo
