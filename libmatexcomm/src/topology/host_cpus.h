// host_cpus.h - how many PUs the ranks of a host may run on. Launchers
// (mpirun --bind-to, srun's cpusets), cgroup cpusets and taskset can give a job fewer
// PUs than the host has online; ranks that outnumber those PUs share cores
// however many the host has, and their waits must yield accordingly.
#pragma once

#include <mpi.h>

#include "topology/layout.h"

namespace matexcomm::topo {

// How crowded my host and my node are. A communicator over some of a job's
// ranks cannot see the others, yet they may run on the same cores: a
// sub-communicator takes its parent's figures rather than measuring its own
// (a snapshot: affinities changed after the parent was made do not count).
struct HostLoad {
  int pus = 0;         // PUs my host's ranks may run on (0: unknown)
  int host_ranks = 0;  // ranks on my host: all its virtual nodes (and others of the job: measure_host_load)
  int node_ranks = 0;  // ranks on my (virtual) node

  // Each rank may have a core of its own.
  bool host_has_dedicated_cores() const { return pus > 0 && host_ranks <= pus; }
  bool node_has_dedicated_cores() const { return pus > 0 && node_ranks <= pus; }
};

// Collective over `comm` (the layout's communicator). `pus` is the number of
// PUs in the union of the CPU affinities (of each process's main thread) of
// my host's ranks in `comm` (hosts as the layout's host ids name them, so
// virtual nodes of one machine share it). Where some rank of the host cannot
// read its affinity, every rank of that host falls back to the PUs online
// (sysconf). `host_ranks` and `node_ranks` count my host's and my node's
// ranks in `comm`. Where `comm` is smaller than MPI_COMM_WORLD and its ranks
// on my host may run on every PU online, every rank the launcher started on
// this machine runs on those PUs too: `host_ranks` (and `node_ranks`, where
// no virtual nodes split the host) is raised to the launcher's count
// (launcher_ranks_on_machine) if that is larger.
// Cost: one MPI_Comm_split of `comm` by host, then two MPI_Allreduces on it,
// the second of ceil(P / 64) words for P the highest PU index + 1.
HostLoad measure_host_load(MPI_Comm comm, const Layout& layout);

// The launcher's count of the job's ranks on this machine, from its
// environment (Open MPI's OMPI_COMM_WORLD_LOCAL_SIZE, or MPICH Hydra's
// MPI_LOCALNRANKS); 0 where neither is set to a positive number.
int launcher_ranks_on_machine();

}  // namespace matexcomm::topo
