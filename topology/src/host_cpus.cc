// host_cpus.cc - the PUs the ranks of a host may run on (host_cpus.h): the
// bitwise or of their affinity masks over a communicator of the host's ranks.
#include "matex/topology/host_cpus.h"

#include <unistd.h>

#include <bitset>
#include <cstdint>
#include <vector>

#include "core/error.h"
#include "matex/topology/thread_budget.h"

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

}  // namespace

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

}  // namespace matexcomm::topo
