// test_hardware_sysfs.cc - the /sys probe (the topology of builds without
// hwloc) against hwloc's answers on this machine, and on a made-up /sys tree
// of two packages, two NUMA nodes, hyperthreads, a GPU, a BMC display and NICs.
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "topology/hardware.h"
#include "topology/hardware_sysfs.h"
#include "topology/index_list.h"

namespace {

namespace topo = matexcomm::topo;

std::vector<std::string> names_of(const std::vector<topo::PciDevice>& devices) {
  std::vector<std::string> names;
  for (const auto& device : devices) names.push_back(device.name);
  return names;
}

#ifdef MATEX_HAVE_HWLOC
TEST(HardwareSysfs, AgreesWithHwlocOnThisMachine) {
  topo::HardwareInfo hwloc = topo::probe_hardware();
  topo::HardwareInfo sysfs = topo::sysfs::probe_hardware();
  EXPECT_EQ(sysfs.packages, hwloc.packages);
  EXPECT_EQ(sysfs.numa_nodes, hwloc.numa_nodes);
  EXPECT_EQ(sysfs.cores, hwloc.cores);
  EXPECT_EQ(sysfs.pus, hwloc.pus);
  EXPECT_EQ(sysfs.bound_pus, hwloc.bound_pus);
  EXPECT_EQ(sysfs.bound_cores, hwloc.bound_cores);
  EXPECT_EQ(sysfs.numa_of_binding, hwloc.numa_of_binding);
  EXPECT_EQ(names_of(sysfs.nics), names_of(hwloc.nics));
  for (size_t i = 0; i < sysfs.nics.size() && i < hwloc.nics.size(); ++i) {
    EXPECT_EQ(sysfs.nics[i].bus_id, hwloc.nics[i].bus_id) << sysfs.nics[i].name;
  }
  EXPECT_EQ(sysfs.gpus.size(), hwloc.gpus.size());
  EXPECT_EQ(topo::sysfs::pus_of_cores(), topo::pus_of_cores());
  EXPECT_EQ(topo::sysfs::host_kind(), topo::host_kind());
}
#endif

class FakeSysfs : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/matex-fake-sysfs-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    root_ = pattern;
    // 2 packages x 2 cores x 2 threads; PU i and i+4 share a core (Intel's numbering).
    write("sys/devices/system/cpu/online", "0-7");
    for (int pu = 0; pu < 8; ++pu) {
      std::string topology = "sys/devices/system/cpu/cpu" + std::to_string(pu) + "/topology/";
      write(topology + "physical_package_id", std::to_string((pu % 4) / 2));
      write(topology + "core_id", std::to_string(pu % 2));
    }
    write("sys/devices/system/node/node0/cpulist", "0-1,4-5");
    write("sys/devices/system/node/node1/cpulist", "2-3,6-7");
    write("sys/bus/pci/devices/0000:3b:00.0/class", "0x030200");  // 3D controller
    write("sys/bus/pci/devices/0000:3b:00.0/vendor", "0x10de");
    write("sys/bus/pci/devices/0000:3b:00.0/device", "0x2335");
    write("sys/bus/pci/devices/0000:3b:00.0/local_cpulist", "2-3,6-7");
    write("sys/bus/pci/devices/0000:3b:00.0/numa_node", "1");
    write("sys/bus/pci/devices/0000:3b:00.0/drm/card1/dev", "226:1");
    write("sys/bus/pci/devices/0000:03:00.0/class", "0x030000");  // the BMC's display: not a GPU
    write("sys/bus/pci/devices/0000:03:00.0/vendor", "0x1a03");
    write("sys/bus/pci/devices/0000:18:00.0/class", "0x020000");  // an Ethernet controller
    write("sys/bus/pci/devices/0000:18:00.0/local_cpulist", "0-1,4-5");
    write("sys/bus/pci/devices/0000:18:00.0/numa_node", "0");
    mkdirs("sys/class/net/eth0");
    ASSERT_EQ(symlink((root_ + "/sys/bus/pci/devices/0000:18:00.0").c_str(),
                      (root_ + "/sys/class/net/eth0/device").c_str()), 0);
    mkdirs("sys/class/net/lo");  // no device: virtual
    write("proc/cpuinfo", "processor\t: 0\nmodel name\t: Example CPU 9000\n");
  }
  void TearDown() override { std::system(("rm -rf " + root_).c_str()); }

  void mkdirs(const std::string& folder) {
    std::string path = root_;
    std::string rest = folder;
    size_t at = 0;
    while (at != std::string::npos) {
      at = rest.find('/');
      path += "/" + rest.substr(0, at);
      mkdir(path.c_str(), 0755);
      if (at != std::string::npos) rest = rest.substr(at + 1);
    }
  }
  void write(const std::string& file, const std::string& text) {
    mkdirs(file.substr(0, file.find_last_of('/')));
    std::ofstream(root_ + "/" + file) << text << "\n";
  }

  // The live affinity cut to the fake PUs 0-7, as the probe sees it.
  std::set<int> expected_binding() const {
    cpu_set_t mask;
    CPU_ZERO(&mask);
    std::set<int> bound;
    if (sched_getaffinity(0, sizeof(mask), &mask) == 0) {
      for (int pu = 0; pu < 8; ++pu) {
        if (CPU_ISSET(pu, &mask)) bound.insert(pu);
      }
    }
    if (bound.empty()) {
      for (int pu = 0; pu < 8; ++pu) bound.insert(pu);
    }
    return bound;
  }

  std::string root_;
};

TEST_F(FakeSysfs, CountsPackagesCoresPusAndNumaNodes) {
  topo::HardwareInfo info = topo::sysfs::probe_hardware(root_);
  EXPECT_EQ(info.packages, 2);
  EXPECT_EQ(info.cores, 4);
  EXPECT_EQ(info.pus, 8);
  EXPECT_EQ(info.numa_nodes, 2);
  // Cores package by package, each with its hyperthread sibling.
  std::vector<std::vector<int>> cores = {{0, 4}, {1, 5}, {2, 6}, {3, 7}};
  EXPECT_EQ(topo::sysfs::pus_of_cores(root_), cores);
  EXPECT_EQ(topo::sysfs::host_kind(root_), "Example CPU 9000; 2 packages, 4 cores, 8 PUs");
}

TEST_F(FakeSysfs, DescribesTheBindingInThoseTerms) {
  topo::HardwareInfo info = topo::sysfs::probe_hardware(root_);
  std::set<int> bound = expected_binding();
  EXPECT_EQ(info.bound_pus, topo::format_index_list({bound.begin(), bound.end()}));
  std::vector<int> cores;
  std::vector<int> nodes;
  for (int pu : bound) {
    cores.push_back(pu % 4);
    nodes.push_back((pu % 4) / 2);
  }
  EXPECT_EQ(info.bound_cores, topo::format_index_list(cores));
  EXPECT_EQ(info.numa_of_binding, topo::format_index_list(nodes));
}

TEST_F(FakeSysfs, FindsTheGpuAndTheNicButNotTheBmcOrLoopback) {
  topo::HardwareInfo info = topo::sysfs::probe_hardware(root_);
  ASSERT_EQ(info.gpus.size(), 1u);
  EXPECT_EQ(info.gpus[0].name, "card1");
  EXPECT_EQ(info.gpus[0].bus_id, "0000:3b:00.0");
  EXPECT_EQ(info.gpus[0].local_cpus, "2-3,6-7");
  EXPECT_EQ(info.gpus[0].numa_node, 1);
  ASSERT_EQ(info.nics.size(), 1u);
  EXPECT_EQ(info.nics[0].name, "eth0");
  EXPECT_EQ(info.nics[0].bus_id, "0000:18:00.0");
  EXPECT_EQ(info.nics[0].numa_node, 0);
  // The GPU is nearest when the binding touches its PUs.
  std::set<int> bound = expected_binding();
  bool near = bound.count(2) || bound.count(3) || bound.count(6) || bound.count(7);
  EXPECT_EQ(info.nearest_gpu, near ? "card1" : "-");
}

TEST_F(FakeSysfs, AMachineWithoutNumaOrCoreFilesStillAddsUp) {
  std::string folders = root_ + "/sys/devices/system/node " + root_ + "/sys/devices/system/cpu/cpu*/topology";
  std::system(("rm -rf " + folders).c_str());
  topo::HardwareInfo info = topo::sysfs::probe_hardware(root_);
  EXPECT_EQ(info.pus, 8);
  EXPECT_EQ(info.cores, 8);  // each PU its own core
  EXPECT_EQ(info.packages, 1);
  EXPECT_EQ(info.numa_nodes, 1);
}

}  // namespace
