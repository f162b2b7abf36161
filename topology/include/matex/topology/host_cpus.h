// host_cpus.h - how many PUs the ranks of a host may run on. Launchers
// (mpirun --bind-to, srun's cpusets), cgroup cpusets and taskset can give a job fewer
// PUs than the host has online; ranks that outnumber those PUs share cores
// however many the host has, and their waits must yield accordingly.
#pragma once

#include <mpi.h>

#include "matex/topology/layout.h"

namespace matexcomm::topo {

// Collective over `comm` (the layout's communicator): the number of PUs in the
// union of the CPU affinities (of each process's main thread) of my host's
// ranks in `comm` (hosts as the
// layout's host ids name them, so virtual nodes of one machine share it).
// Where some rank of the host cannot read its affinity, every rank of that
// host falls back to the PUs online (sysconf), as before.
// Cost: one MPI_Comm_split of `comm` by host, then two MPI_Allreduces on it,
// the second of ceil(P / 64) words for P the highest PU index + 1.
int usable_pus_on_host(MPI_Comm comm, const Layout& layout);

}  // namespace matexcomm::topo
