// hardware_probe.cc - probe_hardware(): what hwloc (2.x) sees of this machine
// and of this process's CPU binding.
//
// Index conventions: PU lists use OS indices (the numbers taskset/numactl
// use); core and NUMA lists use hwloc logical indices (core OS indices repeat
// across packages). Devices come from hwloc's I/O discovery; a machine or
// container without PCI information simply reports no GPUs and no NICs.
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "core/error.h"
#include "topology/hwloc_handles.h"
#include "topology/index_list.h"
#include "topology/hardware.h"

namespace matexcomm::topo {

namespace {

struct FoundDevice {
  PciDevice info;
  hwloc_const_cpuset_t locality = nullptr;  // owned by the topology
  hwloc_obj_t pci = nullptr;                // PCI device it sits on, if any
  bool named_by_coproc = false;
};

[[noreturn]] void hwloc_failed(const char* call) {
  MATEX_RAISE(MATEX_ERR_SYSTEM, std::string("hwloc: ") + call + " failed: " + std::strerror(errno));
}

int count_of(hwloc_topology_t topology, hwloc_obj_type_t type) {
  return std::max(0, hwloc_get_nbobjs_by_type(topology, type));
}

std::string pu_list(hwloc_const_cpuset_t set) {
  std::vector<int> pus;
  if (hwloc_bitmap_weight(set) < 0) return {};  // infinite: never for a topology's sets
  for (int id = hwloc_bitmap_first(set); id != -1; id = hwloc_bitmap_next(set, id)) pus.push_back(id);
  return format_index_list(pus);
}

// Logical indices of the NUMA nodes with CPUs in `cpus` (memory-only nodes skipped).
std::vector<int> numa_nodes_touching(hwloc_topology_t topology, hwloc_const_cpuset_t cpus) {
  std::vector<int> nodes;
  for (hwloc_obj_t node = nullptr; (node = hwloc_get_next_obj_by_type(topology, HWLOC_OBJ_NUMANODE, node));) {
    if (node->cpuset != nullptr && hwloc_bitmap_intersects(node->cpuset, cpus)) {
      nodes.push_back(static_cast<int>(node->logical_index));
    }
  }
  return nodes;
}

UniqueBitmap binding_of_this_process(hwloc_topology_t topology) {
  hwloc_const_cpuset_t everything = hwloc_topology_get_topology_cpuset(topology);
  UniqueBitmap bound(hwloc_bitmap_alloc());
  if (!bound) hwloc_failed("hwloc_bitmap_alloc");
  bool known = hwloc_get_cpubind(topology, bound.get(), HWLOC_CPUBIND_PROCESS) == 0 ||
               hwloc_get_cpubind(topology, bound.get(), 0) == 0;
  if (known) hwloc_bitmap_and(bound.get(), bound.get(), everything);
  if (!known || hwloc_bitmap_iszero(bound.get())) hwloc_bitmap_copy(bound.get(), everything);
  return bound;
}

std::string core_list(hwloc_topology_t topology, hwloc_const_cpuset_t bound) {
  if (count_of(topology, HWLOC_OBJ_CORE) == 0) return pu_list(bound);  // no core info: PUs stand in
  std::vector<int> cores;
  for (hwloc_obj_t core = nullptr; (core = hwloc_get_next_obj_by_type(topology, HWLOC_OBJ_CORE, core));) {
    if (core->cpuset != nullptr && hwloc_bitmap_intersects(core->cpuset, bound)) {
      cores.push_back(static_cast<int>(core->logical_index));
    }
  }
  return format_index_list(cores);
}

hwloc_obj_t pci_device_under(hwloc_obj_t object) {
  for (hwloc_obj_t at = object; at != nullptr; at = at->parent) {
    if (at->type == HWLOC_OBJ_PCI_DEVICE) return at;
  }
  return nullptr;
}

std::string bus_id_of(hwloc_obj_t pci) {
  const auto& attr = pci->attr->pcidev;
  char text[32];
  std::snprintf(text, sizeof(text), "%04x:%02x:%02x.%01x", static_cast<unsigned>(attr.domain),
                attr.bus, attr.dev, attr.func);
  return text;
}

std::string vendor_device_of(hwloc_obj_t pci) {
  char text[16];
  std::snprintf(text, sizeof(text), "%04x:%04x", pci->attr->pcidev.vendor_id,
                pci->attr->pcidev.device_id);
  return text;
}

bool is_bmc_display(hwloc_obj_t pci) {
  if (pci == nullptr) return false;
  return is_bmc_display_vendor(pci->attr->pcidev.vendor_id);
}

FoundDevice describe_device(hwloc_topology_t topology, hwloc_obj_t object, const char* kind,
                            const std::string& name) {
  FoundDevice found;
  found.pci = pci_device_under(object);
  hwloc_obj_t home = hwloc_get_non_io_ancestor_obj(topology, object);
  found.locality = home != nullptr && home->cpuset != nullptr
                       ? home->cpuset
                       : hwloc_topology_get_topology_cpuset(topology);
  found.info.kind = kind;
  found.info.name = name;
  if (found.pci != nullptr) found.info.bus_id = bus_id_of(found.pci);
  found.info.local_cpus = pu_list(found.locality);
  std::vector<int> nodes = numa_nodes_touching(topology, found.locality);
  found.info.numa_node = nodes.size() == 1 ? nodes[0] : -1;
  return found;
}

std::string name_of(hwloc_obj_t object) { return object->name != nullptr ? object->name : "?"; }

// One entry per GPU: OS devices sharing a PCI function are merged (a CUDA or
// OpenCL co-processor name wins over DRM/NVML names), then display-class PCI
// functions without any OS device are added under "vendor:device".
std::vector<FoundDevice> find_gpus(hwloc_topology_t topology) {
  std::vector<FoundDevice> gpus;
  for (hwloc_obj_t dev = nullptr; (dev = hwloc_get_next_osdev(topology, dev));) {
    hwloc_obj_osdev_type_t type = dev->attr->osdev.type;
    if (type != HWLOC_OBJ_OSDEV_GPU && type != HWLOC_OBJ_OSDEV_COPROC) continue;
    hwloc_obj_t pci = pci_device_under(dev);
    if (is_bmc_display(pci)) continue;
    auto same = std::find_if(gpus.begin(), gpus.end(),
                             [pci](const FoundDevice& gpu) { return pci != nullptr && gpu.pci == pci; });
    if (same == gpus.end()) {
      gpus.push_back(describe_device(topology, dev, "gpu", name_of(dev)));
      gpus.back().named_by_coproc = type == HWLOC_OBJ_OSDEV_COPROC;
    } else if (type == HWLOC_OBJ_OSDEV_COPROC && !same->named_by_coproc) {
      same->info.name = name_of(dev);
      same->named_by_coproc = true;
    }
  }
  for (hwloc_obj_t pci = nullptr; (pci = hwloc_get_next_pcidev(topology, pci));) {
    unsigned short pci_class = pci->attr->pcidev.class_id;
    if (!is_gpu_pci_class(pci_class) || is_bmc_display(pci)) continue;
    bool seen = std::any_of(gpus.begin(), gpus.end(), [pci](const FoundDevice& gpu) { return gpu.pci == pci; });
    if (!seen) gpus.push_back(describe_device(topology, pci, "gpu", vendor_device_of(pci)));
  }
  std::stable_sort(gpus.begin(), gpus.end(), [](const FoundDevice& a, const FoundDevice& b) {
    if (a.info.bus_id.empty() != b.info.bus_id.empty()) return b.info.bus_id.empty();
    return a.info.bus_id < b.info.bus_id;
  });
  return gpus;
}

std::vector<PciDevice> find_nics(hwloc_topology_t topology) {
  std::vector<PciDevice> nics;
  for (hwloc_obj_t dev = nullptr; (dev = hwloc_get_next_osdev(topology, dev));) {
    hwloc_obj_osdev_type_t type = dev->attr->osdev.type;
    if (type != HWLOC_OBJ_OSDEV_NETWORK && type != HWLOC_OBJ_OSDEV_OPENFABRICS) continue;
    nics.push_back(describe_device(topology, dev, "nic", name_of(dev)).info);
  }
  return nics;
}

UniqueTopology load_topology_with_io() {
  hwloc_topology_t raw = nullptr;
  if (hwloc_topology_init(&raw) != 0) hwloc_failed("hwloc_topology_init");
  UniqueTopology topology(raw);
  // Not fatal: without it we merely see no devices.
  hwloc_topology_set_io_types_filter(raw, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
  // Skip plugins that would contact an X server (gl) or initialize the GPU
  // drivers through OpenCL in every rank; PCI classes and the kernel's DRM
  // devices already reveal the GPUs.
  for (const char* plugin : {"gl", "opencl"}) {
    hwloc_topology_set_components(raw, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, plugin);
  }
  if (hwloc_topology_load(raw) != 0) hwloc_failed("hwloc_topology_load");
  return topology;
}

}  // namespace

std::vector<std::vector<int>> pus_of_cores() {
  hwloc_topology_t raw = nullptr;
  if (hwloc_topology_init(&raw) != 0) hwloc_failed("hwloc_topology_init");
  UniqueTopology topology(raw);
  if (hwloc_topology_load(raw) != 0) hwloc_failed("hwloc_topology_load");
  hwloc_obj_type_t unit = count_of(raw, HWLOC_OBJ_CORE) > 0 ? HWLOC_OBJ_CORE : HWLOC_OBJ_PU;
  std::vector<std::vector<int>> cores;
  for (hwloc_obj_t core = nullptr; (core = hwloc_get_next_obj_by_type(raw, unit, core));) {
    std::vector<int> pus;
    for (int id = hwloc_bitmap_first(core->cpuset); id != -1; id = hwloc_bitmap_next(core->cpuset, id)) {
      pus.push_back(id);
    }
    if (!pus.empty()) cores.push_back(pus);
  }
  return cores;
}

std::string host_kind() {
  hwloc_topology_t raw = nullptr;
  if (hwloc_topology_init(&raw) != 0) hwloc_failed("hwloc_topology_init");
  UniqueTopology topology(raw);
  if (hwloc_topology_load(raw) != 0) hwloc_failed("hwloc_topology_load");
  const char* model = nullptr;
  if (hwloc_obj_t package = hwloc_get_obj_by_type(raw, HWLOC_OBJ_PACKAGE, 0)) {
    model = hwloc_obj_get_info_by_name(package, "CPUModel");
  }
  if (model == nullptr) model = hwloc_obj_get_info_by_name(hwloc_get_root_obj(raw), "CPUModel");
  auto counted = [](int count, const char* what) {
    return std::to_string(count) + " " + what + (count == 1 ? "" : "s");
  };
  return std::string(model != nullptr ? model : "unknown CPU") + "; " +
         counted(count_of(raw, HWLOC_OBJ_PACKAGE), "package") + ", " + counted(count_of(raw, HWLOC_OBJ_CORE), "core") +
         ", " + counted(count_of(raw, HWLOC_OBJ_PU), "PU");
}

HardwareInfo probe_hardware() {
  UniqueTopology owned = load_topology_with_io();
  hwloc_topology_t topology = owned.get();
  HardwareInfo info;
  info.packages = count_of(topology, HWLOC_OBJ_PACKAGE);
  info.numa_nodes = count_of(topology, HWLOC_OBJ_NUMANODE);
  info.cores = count_of(topology, HWLOC_OBJ_CORE);
  info.pus = count_of(topology, HWLOC_OBJ_PU);

  UniqueBitmap bound = binding_of_this_process(topology);
  info.bound_pus = pu_list(bound.get());
  info.bound_cores = core_list(topology, bound.get());
  std::vector<int> nodes = numa_nodes_touching(topology, bound.get());
  info.numa_of_binding = nodes.empty() ? "-" : format_index_list(nodes);

  std::vector<FoundDevice> gpus = find_gpus(topology);
  info.nearest_gpu = "-";
  for (const FoundDevice& gpu : gpus) {
    if (info.nearest_gpu == "-" && hwloc_bitmap_intersects(gpu.locality, bound.get())) {
      info.nearest_gpu = gpu.info.name;
    }
    info.gpus.push_back(gpu.info);
  }
  info.nics = find_nics(topology);
  return info;
}

}  // namespace matexcomm::topo
