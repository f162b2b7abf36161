// hardware_without_hwloc.cc - hardware.h for a build without hwloc: the
// answers come from /sys and the CPU affinity (hardware_sysfs.cc), and the
// first probe says so once per job (world rank 0, or every process that
// probes before MPI starts), as a warning on stderr.
#include <mpi.h>

#include <mutex>

#include "core/logging.h"
#include "topology/hardware.h"
#include "topology/hardware_sysfs.h"

namespace matexcomm::topo {

namespace {

void warn_once() {
  static std::once_flag warned;
  std::call_once(warned, [] {
    int started = 0;
    int rank = 0;
    if (MPI_Initialized(&started) == MPI_SUCCESS && started != 0) MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank != 0) return;
    MATEX_LOG(LogLevel::kWarn,
              "libmatexcomm was built without hwloc: the topology comes from /sys and the CPU affinity "
              "(cores, NUMA nodes, PCI GPUs and NICs; no hwloc plugins). Install hwloc's headers and "
              "rebuild for hwloc's view");
  });
}

}  // namespace

HardwareInfo probe_hardware() {
  warn_once();
  return sysfs::probe_hardware();
}

std::vector<std::vector<int>> pus_of_cores() {
  warn_once();
  return sysfs::pus_of_cores();
}

std::string host_kind() {
  warn_once();
  return sysfs::host_kind();
}

}  // namespace matexcomm::topo
