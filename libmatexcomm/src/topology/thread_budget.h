// thread_budget.h - how many CPU threads each rank should use, and on which
// PUs: ranks on one physical host whose CPU affinities overlap (unbound, or
// bound to a socket they share) get disjoint blocks of whole cores, so that
// their frameworks' thread pools stop fighting over the same cores.
#pragma once

#include <mpi.h>
#include <sys/types.h>

#include <string>
#include <vector>

#include "topology/layout.h"

namespace matexcomm::topo {

struct ThreadBudget {
  std::vector<int> pus;  // OS indices of the PUs the rank should run on
  int cores = 0;         // physical cores among them
  int intra_op = 0;      // threads for one op's work (0: the framework's default)
  int inter_op = 0;      // ops run side by side (0: the framework's default)
  bool narrowed = false; // pus is narrower than the affinity the rank has: it should bind to them
  bool shared = false;   // more ranks than cores: the block is a core other ranks share too
  bool starved = false;  // the launcher bound the rank to fewer cores than its share of the host
};

// MATEX_THREADS: "auto" (an even split), "off" (every rank keeps its affinity
// and the framework's defaults) or a positive number of cores per rank.
// Throws Error(MATEX_ERR_CONFIG) naming MATEX_THREADS for anything else.
int parse_threads_setting(const std::string& setting);  // 0 auto, -1 off, else cores per rank
constexpr int kThreadsAuto = 0;
constexpr int kThreadsOff = -1;

// The split itself, for the ranks of one host. masks[k]: the PUs of the
// host's k-th rank (in world-rank order); cores: the PUs of each physical core
// of the host, in topology order (so blocks stay within a package and NUMA
// node where they can). Ranks whose masks overlap no other keep them. Each
// group of overlapping ranks splits the cores its masks cover into contiguous
// blocks of whole cores, one per rank in order (`cores_per_rank` each when
// positive, else an even share); with more ranks than cores, ranks share
// cores round-robin. A block never adds a PU that the rank's own mask lacks.
// Cost: O(ranks^2 * PUs) for the overlap groups, O(PUs) per rank after.
std::vector<ThreadBudget> split_host_affinities(const std::vector<std::vector<int>>& masks,
                                                const std::vector<std::vector<int>>& cores,
                                                int cores_per_rank);

// Collective over `comm` (the layout's communicator): exchanges every rank's
// CPU affinity (sched_getaffinity of the calling thread), groups the ranks by
// physical host (the layout's host ids, so virtual nodes on one machine share
// it) and returns this rank's budget. `setting` as parse_threads_setting.
ThreadBudget budget_threads(MPI_Comm comm, const Layout& layout, const std::string& setting);

// Collective over `comm`: on `root`, a compact table of every rank's budget
// (one line per rank: rank, node, PUs, cores, intra-op, inter-op, notes);
// elsewhere "".
std::string budget_table(MPI_Comm comm, int root, const Layout& layout, const ThreadBudget& mine,
                         const std::string& setting);

// The OS indices of the PUs a thread of this process may run on
// (sched_getaffinity; 0: the calling thread, getpid(): the main thread), in
// increasing order. Throws Error(MATEX_ERR_SYSTEM) where it cannot be read.
std::vector<int> affinity_of_thread(pid_t thread);

// "0-3,8": a PU list as taskset -c takes it.
std::string format_cpu_list(const std::vector<int>& pus);

}  // namespace matexcomm::topo
