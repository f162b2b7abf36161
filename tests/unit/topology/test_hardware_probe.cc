// test_hardware_probe.cc - probe_hardware runs on any machine (GPUs or not,
// PCI information or not) and describes a consistent binding.
#include <gtest/gtest.h>

#include <string>

#include "topology/hardware.h"

namespace {

using matexcomm::topo::HardwareInfo;
using matexcomm::topo::PciDevice;
using matexcomm::topo::probe_hardware;

bool looks_like_index_list(const std::string& text) {
  if (text.empty()) return false;
  for (char c : text) {
    if (!((c >= '0' && c <= '9') || c == ',' || c == '-')) return false;
  }
  return true;
}

TEST(HardwareProbe, CountsTheMachine) {
  HardwareInfo info = probe_hardware();
  EXPECT_GE(info.packages, 1);
  EXPECT_GE(info.numa_nodes, 1);
  EXPECT_GE(info.cores, 1);
  EXPECT_GE(info.pus, 1);
  EXPECT_LE(info.cores, info.pus);
}

TEST(HardwareProbe, DescribesTheBinding) {
  HardwareInfo info = probe_hardware();
  EXPECT_TRUE(looks_like_index_list(info.bound_pus)) << info.bound_pus;
  EXPECT_TRUE(looks_like_index_list(info.bound_cores)) << info.bound_cores;
  EXPECT_TRUE(info.numa_of_binding == "-" || looks_like_index_list(info.numa_of_binding))
      << info.numa_of_binding;
}

TEST(HardwareProbe, DevicesAreWellFormed) {
  HardwareInfo info = probe_hardware();
  for (const PciDevice& gpu : info.gpus) {
    EXPECT_EQ(gpu.kind, "gpu");
    EXPECT_FALSE(gpu.name.empty());
  }
  for (const PciDevice& nic : info.nics) {
    EXPECT_EQ(nic.kind, "nic");
    EXPECT_FALSE(nic.name.empty());
  }
  ASSERT_FALSE(info.nearest_gpu.empty());
  if (info.gpus.empty()) {
    EXPECT_EQ(info.nearest_gpu, "-");
  } else if (info.nearest_gpu != "-") {
    bool listed = false;
    for (const PciDevice& gpu : info.gpus) listed = listed || gpu.name == info.nearest_gpu;
    EXPECT_TRUE(listed) << info.nearest_gpu;
  }
}

TEST(HardwareProbe, IsRepeatable) {
  HardwareInfo first = probe_hardware();
  HardwareInfo second = probe_hardware();
  EXPECT_EQ(first.pus, second.pus);
  EXPECT_EQ(first.bound_pus, second.bound_pus);
  EXPECT_EQ(first.gpus.size(), second.gpus.size());
  EXPECT_EQ(first.nics.size(), second.nics.size());
}

}  // namespace
