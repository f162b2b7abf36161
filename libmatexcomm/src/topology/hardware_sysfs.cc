// hardware_sysfs.cc - the hwloc probe's answers read from Linux's own files
// (see hardware_sysfs.h), for builds without hwloc.
//
// Where the numbers come from, and how they line up with hwloc's:
//   PUs        /sys/devices/system/cpu/online, cut to the cgroup's cpuset
//              (hwloc also leaves out PUs the cgroup disallows);
//   cores      distinct (physical_package_id, core_id) pairs of those PUs,
//              ordered package by package, then by their first PU;
//   packages   distinct physical_package_id;
//   NUMA nodes /sys/devices/system/node/node<N>/cpulist, logical index in OS
//              order; a machine that shows none has one (as hwloc says);
//   binding    sched_getaffinity, cut to the PUs above (all of them if unbound);
//   GPUs       PCI functions of class 0x0300/0x0302 but BMC displays, named by
//              their DRM card when the driver made one, else vendor:device;
//   NICs       /sys/class/net and /sys/class/infiniband entries backed by a
//              device (loopback, bridges, veth and tunnels have none).
// Cost: O(PUs + PCI functions) small file reads.
#include "topology/hardware_sysfs.h"

#include <dirent.h>
#include <sched.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "topology/index_list.h"

namespace matexcomm::topo::sysfs {

namespace {

constexpr unsigned kBmcDisplayVendors[] = {0x1a03, 0x102b};  // ASPEED, Matrox G200 (iLO/iDRAC)

std::string read_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  if (in) std::getline(in, line);
  while (!line.empty() && (line.back() == '\n' || line.back() == ' ' || line.back() == '\t')) line.pop_back();
  return line;
}

bool exists(const std::string& path) {
  struct stat info {};
  return ::stat(path.c_str(), &info) == 0;
}

std::vector<std::string> entries_of(const std::string& folder) {
  std::vector<std::string> names;
  DIR* dir = ::opendir(folder.c_str());
  if (dir == nullptr) return names;
  while (dirent* entry = ::readdir(dir)) {
    std::string name = entry->d_name;
    if (name != "." && name != "..") names.push_back(name);
  }
  ::closedir(dir);
  std::sort(names.begin(), names.end());
  return names;
}

// "0-3,8" -> {0,1,2,3,8}; anything unreadable ends the list there.
std::set<int> parse_index_list(const std::string& text) {
  std::set<int> indices;
  std::stringstream items(text);
  std::string item;
  while (std::getline(items, item, ',')) {
    if (item.empty()) continue;
    char* end = nullptr;
    long first = std::strtol(item.c_str(), &end, 10);
    if (end == item.c_str()) break;
    long last = first;
    if (*end == '-') {
      const char* second = end + 1;
      last = std::strtol(second, &end, 10);
      if (end == second) break;
    }
    for (long i = first; i <= last && i - first < (1 << 20); ++i) indices.insert(static_cast<int>(i));
  }
  return indices;
}

std::string list_of(const std::set<int>& indices) {
  return format_index_list(std::vector<int>(indices.begin(), indices.end()));
}

bool intersects(const std::set<int>& a, const std::set<int>& b) {
  return std::any_of(a.begin(), a.end(), [&](int x) { return b.count(x) != 0; });
}

int number_in(const std::string& path, int fallback) {
  std::string text = read_line(path);
  if (text.empty()) return fallback;
  char* end = nullptr;
  long value = std::strtol(text.c_str(), &end, 0);
  return end == text.c_str() ? fallback : static_cast<int>(value);
}

struct CpuFacts {
  std::set<int> pus;                                 // online and allowed
  std::vector<std::pair<int, std::set<int>>> cores;  // (package, PUs), in hwloc's order
  std::vector<std::set<int>> numa_cpus;              // per NUMA node, logical order
  std::vector<int> numa_os_index;
};

std::set<int> allowed_pus(const std::string& root) {
  std::set<int> online = parse_index_list(read_line(root + "/sys/devices/system/cpu/online"));
  if (online.empty()) {
    long count = ::sysconf(_SC_NPROCESSORS_ONLN);
    for (long i = 0; i < count; ++i) online.insert(static_cast<int>(i));
  }
  for (const char* file : {"/sys/fs/cgroup/cpuset.cpus.effective", "/sys/fs/cgroup/cpuset/cpuset.effective_cpus"}) {
    std::set<int> allowed = parse_index_list(read_line(root + file));
    if (allowed.empty()) continue;
    std::set<int> both;
    for (int pu : online) {
      if (allowed.count(pu) != 0) both.insert(pu);
    }
    if (!both.empty()) return both;
  }
  return online;
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
  std::vector<int> nodes;
  for (const std::string& name : entries_of(root + "/sys/devices/system/node")) {
    if (name.rfind("node", 0) == 0 && name.size() > 4 &&
        name.find_first_not_of("0123456789", 4) == std::string::npos) {
      nodes.push_back(std::atoi(name.c_str() + 4));
    }
  }
  std::sort(nodes.begin(), nodes.end());
  for (int node : nodes) {
    std::set<int> cpus = parse_index_list(read_line(root + "/sys/devices/system/node/node" +
                                                    std::to_string(node) + "/cpulist"));
    std::set<int> mine;
    for (int pu : cpus) {
      if (facts.pus.count(pu) != 0) mine.insert(pu);
    }
    facts.numa_cpus.push_back(mine);
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

std::set<int> binding(const CpuFacts& facts) {
  std::set<int> bound;
  cpu_set_t mask;
  CPU_ZERO(&mask);
  if (::sched_getaffinity(0, sizeof(mask), &mask) == 0) {
    for (int pu : facts.pus) {
      if (pu < CPU_SETSIZE && CPU_ISSET(pu, &mask)) bound.insert(pu);
    }
  }
  return bound.empty() ? facts.pus : bound;
}

// A device's place: its local CPUs (all if the kernel does not say) and NUMA node.
void place_device(const CpuFacts& facts, const std::string& device, PciDevice& info,
                  std::set<int>& locality) {
  locality = parse_index_list(read_line(device + "/local_cpulist"));
  std::set<int> kept;
  for (int pu : locality) {
    if (facts.pus.count(pu) != 0) kept.insert(pu);
  }
  locality = kept.empty() ? facts.pus : kept;
  info.local_cpus = list_of(locality);
  int os_node = number_in(device + "/numa_node", -1);
  info.numa_node = -1;
  for (size_t i = 0; i < facts.numa_os_index.size(); ++i) {
    if (facts.numa_os_index[i] == os_node) info.numa_node = static_cast<int>(i);
  }
  if (info.numa_node == -1) {
    std::vector<int> nodes = numa_touching(facts, locality);
    if (nodes.size() == 1) info.numa_node = nodes[0];
  }
}

struct PlacedDevice {
  PciDevice info;
  std::set<int> locality;
};

std::vector<PlacedDevice> find_gpus(const std::string& root, const CpuFacts& facts) {
  std::vector<PlacedDevice> gpus;
  std::string bus = root + "/sys/bus/pci/devices/";
  for (const std::string& address : entries_of(bus)) {
    std::string device = bus + address;
    int pci_class = number_in(device + "/class", 0) >> 8;  // 0xCCSSPP: class and subclass
    if (pci_class != 0x0300 && pci_class != 0x0302) continue;
    unsigned vendor = static_cast<unsigned>(number_in(device + "/vendor", 0));
    if (std::count(std::begin(kBmcDisplayVendors), std::end(kBmcDisplayVendors), vendor) > 0) continue;
    PlacedDevice gpu;
    gpu.info.kind = "gpu";
    gpu.info.bus_id = address;
    char id[16];
    std::snprintf(id, sizeof(id), "%04x:%04x", vendor, static_cast<unsigned>(number_in(device + "/device", 0)));
    gpu.info.name = id;
    for (const std::string& name : entries_of(device + "/drm")) {
      if (name.rfind("card", 0) == 0) gpu.info.name = name;
    }
    place_device(facts, device, gpu.info, gpu.locality);
    gpus.push_back(gpu);
  }
  return gpus;
}

bool is_pci_address(const std::string& text) {
  return text.size() == 12 && text[4] == ':' && text[7] == ':' && text[10] == '.';
}

// The PCI function a device sits on: the nearest PCI address in its resolved
// path (a virtio NIC's device is virtio0, whose parent is the PCI function).
std::string pci_address_under(const std::string& device) {
  char* resolved = ::realpath(device.c_str(), nullptr);
  if (resolved == nullptr) return {};
  std::string path = resolved;
  std::free(resolved);
  std::string found;
  std::stringstream parts(path);
  for (std::string part; std::getline(parts, part, '/');) {
    if (is_pci_address(part)) found = part;
  }
  return found;
}

std::vector<PciDevice> find_nics(const std::string& root, const CpuFacts& facts) {
  std::vector<PciDevice> nics;
  for (const char* folder : {"/sys/class/net/", "/sys/class/infiniband/"}) {
    for (const std::string& name : entries_of(root + folder)) {
      std::string device = root + folder + name + "/device";
      if (!exists(device)) continue;  // virtual: no device behind it
      PciDevice nic;
      nic.kind = "nic";
      nic.name = name;
      nic.bus_id = pci_address_under(device);
      std::set<int> locality;
      place_device(facts, device, nic, locality);
      nics.push_back(nic);
    }
  }
  return nics;
}

std::string cpu_model(const std::string& root) {
  std::ifstream in(root + "/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    for (const char* key : {"model name", "Model", "cpu model"}) {
      if (line.rfind(key, 0) != 0) continue;
      size_t colon = line.find(':');
      if (colon == std::string::npos) continue;
      std::string model = line.substr(colon + 1);
      model.erase(0, model.find_first_not_of(" \t"));
      if (!model.empty()) return model;
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
