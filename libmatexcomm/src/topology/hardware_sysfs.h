// hardware_sysfs.h - the machine as Linux shows it in /sys and /proc, for a
// build without hwloc (MATEX_WITH_HWLOC=OFF or hwloc not found). Same answers
// as hardware.h's hwloc probe for CPUs, NUMA nodes and the binding; devices
// are PCI functions by class (display and 3D controllers: GPUs) and network
// interfaces backed by a device. Internal to matex_topology.
//
// `root` prefixes every path ("" for the live system), so tests can point it
// at a tree of their own. Cost: a few hundred small file reads, no process
// or library started. Never throws for a missing file: what cannot be read
// is left out (0 counts, "-" for unknown NUMA and GPU).
#pragma once

#include <string>
#include <vector>

#include "topology/hardware.h"

namespace matexcomm::topo::sysfs {

HardwareInfo probe_hardware(const std::string& root = "");
std::vector<std::vector<int>> pus_of_cores(const std::string& root = "");
std::string host_kind(const std::string& root = "");

}  // namespace matexcomm::topo::sysfs
