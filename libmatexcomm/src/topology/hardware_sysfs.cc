// hardware_sysfs.cc - the hwloc probe's answers read from Linux's own files
// (see hardware_sysfs.h), for builds without hwloc.
//
// Where the numbers come from, and how they line up with hwloc's:
//   PUs        /sys/devices/system/cpu/online, cut to this process's cgroup
//              cpuset (from /proc/self/cgroup; v2 and v1), as hwloc leaves out
//              PUs the cgroup disallows;
//   cores      distinct (physical_package_id, core_id) pairs of those PUs,
//              ordered package by package, then by their first PU;
//   packages   distinct physical_package_id;
//   NUMA nodes /sys/devices/system/node/node<N>, cut to the cgroup's memory
//              nodes, logical index in OS order (hwloc's tree order can differ
//              where memory-only nodes sit between others); a machine that
//              shows none has one, as hwloc says;
//   binding    the process's Cpus_allowed_list (/proc/self/status), cut to
//              the PUs above (all of them if that leaves none);
//   GPUs       PCI functions of class 0x0300/0x0302 but BMC displays, named by
//              their DRM card when the driver made one, else vendor:device;
//   NICs       /sys/class/net and /sys/class/infiniband entries backed by a
//              device (loopback, bridges, veth and tunnels have none), placed
//              by the PCI function they sit on, in PCI order.
// A device's NUMA node is the one its local CPUs lie in, -1 when they span
// several (hwloc's rule); the kernel's numa_node only where it lists none.
// Cost: O(PUs + PCI functions + interfaces) small file reads.
#include "topology/hardware_sysfs.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "topology/index_list.h"
#include "topology/sysfs_files.h"

namespace matexcomm::topo::sysfs {

namespace {

std::set<int> set_of(const std::string& list) {
  std::vector<int> indices = parse_index_list(list);
  return {indices.begin(), indices.end()};
}

std::string list_of(const std::set<int>& indices) { return format_index_list({indices.begin(), indices.end()}); }

bool intersects(const std::set<int>& a, const std::set<int>& b) {
  return std::any_of(a.begin(), a.end(), [&](int x) { return b.count(x) != 0; });
}

std::set<int> both(const std::set<int>& a, const std::set<int>& b) {
  std::set<int> common;
  for (int x : a) {
    if (b.count(x) != 0) common.insert(x);
  }
  return common;
}

// This process's cpuset folder: (cgroup v2 folder, cgroup v1 cpuset folder).
std::pair<std::string, std::string> own_cgroup(const std::string& root) {
  std::pair<std::string, std::string> folders;
  std::ifstream in(root + "/proc/self/cgroup");
  for (std::string line; std::getline(in, line);) {
    size_t first = line.find(':');
    size_t second = first == std::string::npos ? first : line.find(':', first + 1);
    if (second == std::string::npos) continue;
    std::string controllers = "," + line.substr(first + 1, second - first - 1) + ",";
    std::string path = line.substr(second + 1);
    if (line.compare(0, first, "0") == 0 && controllers == ",,") {
      folders.first = root + "/sys/fs/cgroup" + (path == "/" ? "" : path);
    } else if (controllers.find(",cpuset,") != std::string::npos) {
      folders.second = root + "/sys/fs/cgroup/cpuset" + (path == "/" ? "" : path);
    }
  }
  return folders;
}

// What the cgroup allows of `kind` ("cpus" or "mems"); {} when it says nothing.
std::set<int> cgroup_allows(const std::string& root, const char* kind) {
  auto [v2, v1] = own_cgroup(root);
  std::string v2_file = std::string("cpuset.") + kind + ".effective";
  std::string v1_file = std::string("cpuset.effective_") + kind;
  for (const std::string& file : {v2.empty() ? "" : v2 + "/" + v2_file, v1.empty() ? "" : v1 + "/" + v1_file,
                                  root + "/sys/fs/cgroup/" + v2_file, root + "/sys/fs/cgroup/cpuset/" + v1_file}) {
    if (file.empty()) continue;
    std::set<int> allowed = set_of(read_line(file));
    if (!allowed.empty()) return allowed;
  }
  return {};
}

struct CpuFacts {
  std::set<int> pus;                                 // online and allowed
  std::vector<std::pair<int, std::set<int>>> cores;  // (package, PUs), in hwloc's order
  std::vector<std::set<int>> numa_cpus;              // per NUMA node, logical order
  std::vector<int> numa_os_index;
};

std::set<int> allowed_pus(const std::string& root) {
  std::set<int> online = set_of(read_line(root + "/sys/devices/system/cpu/online"));
  if (online.empty()) {
    for (const std::string& name : entries_of(root + "/sys/devices/system/cpu")) {
      if (name.size() > 3 && name.compare(0, 3, "cpu") == 0 &&
          name.find_first_not_of("0123456789", 3) == std::string::npos) {
        online.insert(std::atoi(name.c_str() + 3));
      }
    }
  }
  std::set<int> allowed = both(online, cgroup_allows(root, "cpus"));
  return allowed.empty() ? online : allowed;
}

CpuFacts cpu_facts(const std::string& root) {
  CpuFacts facts;
  facts.pus = allowed_pus(root);
  std::map<std::pair<int, int>, std::set<int>> by_core;  // (package, core id) -> PUs
  for (int pu : facts.pus) {
    std::string topology = root + "/sys/devices/system/cpu/cpu" + std::to_string(pu) + "/topology/";
    int package = number_in(topology + "physical_package_id", 0);
    int core = number_in(topology + "core_id", -1 - pu);  // no core facts: the PU is its own core
    by_core[{package, core}].insert(pu);
  }
  for (auto& [key, pus] : by_core) facts.cores.emplace_back(key.first, pus);
  std::sort(facts.cores.begin(), facts.cores.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first < b.first : *a.second.begin() < *b.second.begin();
  });
  std::set<int> allowed_nodes = cgroup_allows(root, "mems");
  std::vector<int> nodes;
  for (const std::string& name : entries_of(root + "/sys/devices/system/node")) {
    if (name.size() > 4 && name.compare(0, 4, "node") == 0 &&
        name.find_first_not_of("0123456789", 4) == std::string::npos) {
      int node = std::atoi(name.c_str() + 4);
      if (allowed_nodes.empty() || allowed_nodes.count(node) != 0) nodes.push_back(node);
    }
  }
  std::sort(nodes.begin(), nodes.end());
  for (int node : nodes) {
    std::string cpulist = read_line(root + "/sys/devices/system/node/node" + std::to_string(node) + "/cpulist");
    facts.numa_cpus.push_back(both(set_of(cpulist), facts.pus));
    facts.numa_os_index.push_back(node);
  }
  if (facts.numa_cpus.empty()) {  // no NUMA information: one node holding everything
    facts.numa_cpus.push_back(facts.pus);
    facts.numa_os_index.push_back(0);
  }
  return facts;
}

std::vector<int> numa_touching(const CpuFacts& facts, const std::set<int>& cpus) {
  std::vector<int> nodes;
  for (size_t i = 0; i < facts.numa_cpus.size(); ++i) {
    if (intersects(facts.numa_cpus[i], cpus)) nodes.push_back(static_cast<int>(i));
  }
  return nodes;
}

// The process's binding (its main thread's, as the kernel reports it), cut to the allowed PUs.
std::set<int> binding(const CpuFacts& facts) {
  std::set<int> bound = both(set_of(value_of("/proc/self/status", "Cpus_allowed_list")), facts.pus);
  return bound.empty() ? facts.pus : bound;
}

struct PlacedDevice {
  PciDevice info;
  std::set<int> locality;
};

// A device's place: its local CPUs (all if the kernel does not say) and its NUMA node.
PlacedDevice placed(const CpuFacts& facts, const std::string& folder) {
  PlacedDevice device;
  std::set<int> local = both(set_of(read_line(folder + "/local_cpulist")), facts.pus);
  device.locality = local.empty() ? facts.pus : local;
  device.info.local_cpus = list_of(device.locality);
  std::vector<int> nodes = numa_touching(facts, device.locality);
  device.info.numa_node = nodes.size() == 1 ? nodes[0] : -1;
  if (local.empty()) {
    int os_node = number_in(folder + "/numa_node", -1);
    for (size_t i = 0; i < facts.numa_os_index.size(); ++i) {
      if (facts.numa_os_index[i] == os_node) device.info.numa_node = static_cast<int>(i);
    }
  }
  return device;
}

std::vector<PlacedDevice> find_gpus(const std::string& root, const CpuFacts& facts) {
  std::vector<PlacedDevice> gpus;
  std::string bus = root + "/sys/bus/pci/devices/";
  for (const std::string& address : entries_of(bus)) {
    std::string folder = bus + address;
    int pci_class = number_in(folder + "/class", 0) >> 8;  // 0xCCSSPP: class and subclass
    unsigned vendor = static_cast<unsigned>(number_in(folder + "/vendor", 0));
    if (!is_gpu_pci_class(static_cast<unsigned>(pci_class)) || is_bmc_display_vendor(vendor)) continue;
    PlacedDevice gpu = placed(facts, folder);
    gpu.info.kind = "gpu";
    gpu.info.bus_id = address;
    char id[16];
    std::snprintf(id, sizeof(id), "%04x:%04x", vendor, static_cast<unsigned>(number_in(folder + "/device", 0)));
    gpu.info.name = id;
    for (const std::string& name : entries_of(folder + "/drm")) {
      if (name.compare(0, 4, "card") == 0) gpu.info.name = name;
    }
    gpus.push_back(gpu);
  }
  return gpus;
}

std::vector<PciDevice> find_nics(const std::string& root, const CpuFacts& facts) {
  std::vector<PciDevice> nics;
  for (const char* kind : {"/sys/class/net/", "/sys/class/infiniband/"}) {
    for (const std::string& name : entries_of(root + kind)) {
      std::string device = root + kind + name + "/device";
      if (!path_exists(device)) continue;  // virtual: no device behind it
      std::string bus_id = pci_address_under(device);
      PciDevice nic = placed(facts, bus_id.empty() ? device : root + "/sys/bus/pci/devices/" + bus_id).info;
      nic.kind = "nic";
      nic.name = name;
      nic.bus_id = bus_id;
      nics.push_back(nic);
    }
  }
  std::stable_sort(nics.begin(), nics.end(), [](const PciDevice& a, const PciDevice& b) {
    if (a.bus_id.empty() != b.bus_id.empty()) return b.bus_id.empty();
    return a.bus_id < b.bus_id;  // PCI order, as hwloc walks the tree
  });
  return nics;
}

std::string cpu_model(const std::string& root) {
  std::ifstream in(root + "/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    for (const char* key : {"model name", "Model", "cpu model"}) {
      if (line.rfind(key, 0) != 0) continue;
      size_t colon = line.find(':');
      if (colon == std::string::npos) continue;
      size_t start = line.find_first_not_of(" \t", colon + 1);
      if (start != std::string::npos) return line.substr(start);
    }
  }
  return "unknown CPU";
}

std::string counted(size_t count, const char* what) {
  return std::to_string(count) + " " + what + (count == 1 ? "" : "s");
}

std::set<int> packages_of(const CpuFacts& facts) {
  std::set<int> packages;
  for (const auto& core : facts.cores) packages.insert(core.first);
  return packages;
}

}  // namespace

std::vector<std::vector<int>> pus_of_cores(const std::string& root) {
  std::vector<std::vector<int>> cores;
  for (const auto& core : cpu_facts(root).cores) cores.emplace_back(core.second.begin(), core.second.end());
  return cores;
}

std::string host_kind(const std::string& root) {
  CpuFacts facts = cpu_facts(root);
  return cpu_model(root) + "; " + counted(packages_of(facts).size(), "package") + ", " +
         counted(facts.cores.size(), "core") + ", " + counted(facts.pus.size(), "PU");
}

HardwareInfo probe_hardware(const std::string& root) {
  CpuFacts facts = cpu_facts(root);
  HardwareInfo info;
  info.packages = static_cast<int>(packages_of(facts).size());
  info.numa_nodes = static_cast<int>(facts.numa_cpus.size());
  info.cores = static_cast<int>(facts.cores.size());
  info.pus = static_cast<int>(facts.pus.size());
  std::set<int> bound = binding(facts);
  info.bound_pus = list_of(bound);
  std::vector<int> bound_cores;
  for (size_t i = 0; i < facts.cores.size(); ++i) {
    if (intersects(facts.cores[i].second, bound)) bound_cores.push_back(static_cast<int>(i));
  }
  info.bound_cores = format_index_list(bound_cores);
  std::vector<int> nodes = numa_touching(facts, bound);
  info.numa_of_binding = nodes.empty() ? "-" : format_index_list(nodes);
  info.nearest_gpu = "-";
  for (const PlacedDevice& gpu : find_gpus(root, facts)) {
    if (info.nearest_gpu == "-" && intersects(gpu.locality, bound)) info.nearest_gpu = gpu.info.name;
    info.gpus.push_back(gpu.info);
  }
  info.nics = find_nics(root, facts);
  return info;
}

}  // namespace matexcomm::topo::sysfs
