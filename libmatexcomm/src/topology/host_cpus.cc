// host_cpus.cc - how crowded a host is (host_cpus.h): the PUs its ranks may run
// on, the bitwise or of their affinity masks over a communicator of the host's
// ranks, and how many ranks share them.
#include "topology/host_cpus.h"

#include <unistd.h>

#include <bitset>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/error.h"
#include "topology/thread_budget.h"

namespace matexcomm::topo {

namespace {

// The index of the first node on my host: the same number on every rank of the host.
int host_color(const Layout& layout) {
  if (layout.node_hosts.size() != static_cast<size_t>(layout.node_count)) return layout.node_index;
  const std::string& mine = layout.node_hosts[layout.node_index];
  for (int node = 0; node < layout.node_count; ++node) {
    if (layout.node_hosts[node] == mine) return node;
  }
  return layout.node_index;
}

// The PUs my host's ranks in `comm` may run on (host_cpus.h).
int usable_pus_on_host(MPI_Comm comm, const Layout& layout) {
  const int online = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  std::vector<int> pus;
  bool known = true;
  try {
    pus = affinity_of_thread(getpid());  // the process's, not a worker thread's pinning
  } catch (const Error&) {
    known = false;
  }
  known = known && !pus.empty();
  const UniqueComm host = UniqueComm::split(comm, host_color(layout), layout.world_rank);
  // [words needed, 1 where the affinity is unknown], the largest on the host.
  int mine[2] = {known ? pus.back() / 64 + 1 : 0, known ? 0 : 1};
  int most[2] = {0, 0};
  check_mpi(MPI_Allreduce(mine, most, 2, MPI_INT, MPI_MAX, host.get()), "MPI_Allreduce of affinity sizes");
  if (most[1] != 0) return online;
  std::vector<uint64_t> bits(static_cast<size_t>(most[0]), 0), all(bits.size(), 0);
  for (int pu : pus) bits[static_cast<size_t>(pu) / 64] |= uint64_t{1} << (pu % 64);
  check_mpi(MPI_Allreduce(bits.data(), all.data(), most[0], MPI_UINT64_T, MPI_BOR, host.get()),
            "MPI_Allreduce of affinity masks");
  int count = 0;
  for (uint64_t word : all) count += static_cast<int>(std::bitset<64>(word).count());
  return count > 0 ? count : online;
}

// Ranks of `layout` on my host.
int layout_ranks_on_host(const Layout& layout) {
  if (layout.node_hosts.size() != static_cast<size_t>(layout.node_count)) return layout.local_size;
  const std::string& host = layout.node_hosts[layout.node_index];
  int on_host = 0;
  for (int r = 0; r < layout.world_size; ++r) on_host += layout.node_hosts[layout.node_of_rank[r]] == host;
  return on_host;
}

}  // namespace

int launcher_ranks_on_machine() {
  for (const char* name : {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS"}) {
    const char* value = std::getenv(name);
    if (value == nullptr) continue;
    char* end = nullptr;
    const long count = std::strtol(value, &end, 10);
    if (end != value && *end == '\0' && count > 0 && count < (1L << 24)) return static_cast<int>(count);
  }
  return 0;
}

HostLoad measure_host_load(MPI_Comm comm, const Layout& layout) {
  HostLoad load;
  load.pus = usable_pus_on_host(comm, layout);
  load.node_ranks = layout.local_size;
  load.host_ranks = layout_ranks_on_host(layout);
  // A communicator over some of the job's ranks sees only those. Where its
  // ranks may run on every PU online, so may every other rank the launcher
  // started on this machine: they all share these PUs, and the launcher's
  // count is the one that matters. Where the members are confined to fewer
  // PUs (bound, or in a cpuset), where the others run is unknown, and the
  // members' own count stands.
  int comm_size = 0, job_size = 0;
  check_mpi(MPI_Comm_size(comm, &comm_size), "MPI_Comm_size");
  check_mpi(MPI_Comm_size(MPI_COMM_WORLD, &job_size), "MPI_Comm_size of MPI_COMM_WORLD");
  const bool every_pu = load.pus >= static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  const int launched = comm_size < job_size && every_pu ? launcher_ranks_on_machine() : 0;
  if (launched > load.host_ranks) {
    if (load.host_ranks == load.node_ranks) load.node_ranks = launched;  // no virtual nodes split the host
    load.host_ranks = launched;
  }
  return load;
}

}  // namespace matexcomm::topo
