// hardware.h - what hwloc says about this machine and this process. Builds
// without hwloc answer from /sys and the CPU affinity instead
// (hardware_sysfs.h, through hardware_without_hwloc.cc), and never throw.
#pragma once

#include <string>
#include <vector>

namespace matexcomm::topo {

struct PciDevice {
  std::string kind;        // "gpu" or "nic"
  std::string name;        // OS device name when known ("cuda0", "eth0", "mlx5_0"), else vendor:device
  std::string bus_id;      // "0000:3b:00.0"
  std::string local_cpus;  // PU list near the device, e.g. "0-15"
  int numa_node = -1;      // logical index of the nearest NUMA node, -1 if unknown
};

struct HardwareInfo {
  int packages = 0;
  int numa_nodes = 0;
  int cores = 0;
  int pus = 0;
  std::string bound_pus;    // this process's CPU binding as a PU list "0-3,8"; all PUs if unbound
  std::string bound_cores;  // the same binding as a core list
  std::string numa_of_binding;  // NUMA nodes the binding touches, "0" or "0,1"; "-" if unknown
  std::vector<PciDevice> gpus;
  std::vector<PciDevice> nics;
  std::string nearest_gpu;  // GPU whose locality covers the binding ("-" when none)
};

// Which PCI functions both probes count as GPUs: display (0x0300) and 3D
// (0x0302) controllers, but the display controllers of baseboard management
// controllers (ASPEED, Matrox G200 on iLO/iDRAC), which are no accelerators.
inline bool is_gpu_pci_class(unsigned class_and_subclass) {
  return class_and_subclass == 0x0300 || class_and_subclass == 0x0302;
}
inline bool is_bmc_display_vendor(unsigned vendor_id) { return vendor_id == 0x1a03 || vendor_id == 0x102b; }

// Loads the hwloc topology (with I/O devices) and describes it. Never throws
// for a missing device class; throws Error(MATEX_ERR_SYSTEM) if hwloc fails.
HardwareInfo probe_hardware();

// The OS indices of every physical core's PUs (its hardware threads), cores in
// topology order (package by package, NUMA node by NUMA node). Loads the
// topology without I/O discovery. A machine whose cores hwloc cannot see gives
// one "core" per PU. Throws Error(MATEX_ERR_SYSTEM) if hwloc fails.
std::vector<std::vector<int>> pus_of_cores();

// What kind of host this is, for tuning files: the CPU model and the counts
// of packages, cores and PUs, e.g. "Intel(R) Xeon(R) ...; 1 package, 2 cores,
// 2 PUs". Hosts of one kind run the same collectives alike. Loads the
// topology without I/O discovery; throws Error(MATEX_ERR_SYSTEM) if hwloc fails.
std::string host_kind();

}  // namespace matexcomm::topo
