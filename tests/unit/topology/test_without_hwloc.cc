// test_without_hwloc.cc - hardware.h as a build without hwloc provides it
// (hardware_without_hwloc.cc over the /sys probe): the same answers as the
// /sys probe, and one warning per process however often it is asked. Its own
// executable: the unit tests link hwloc's probe, which defines the same names.
#include <gtest/gtest.h>

#include <string>

#include "topology/hardware.h"
#include "topology/hardware_sysfs.h"

namespace {

namespace topo = matexcomm::topo;

size_t count_of(const std::string& text, const std::string& what) {
  size_t count = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++count;
  return count;
}

TEST(WithoutHwloc, AnswersAsTheSysfsProbeAndWarnsOnce) {
  testing::internal::CaptureStderr();
  topo::HardwareInfo first = topo::probe_hardware();
  std::vector<std::vector<int>> cores = topo::pus_of_cores();
  std::string kind = topo::host_kind();
  topo::probe_hardware();
  std::string warnings = testing::internal::GetCapturedStderr();
  EXPECT_EQ(count_of(warnings, "built without hwloc"), 1u) << warnings;

  topo::HardwareInfo sysfs = topo::sysfs::probe_hardware();
  EXPECT_EQ(first.pus, sysfs.pus);
  EXPECT_EQ(first.cores, sysfs.cores);
  EXPECT_EQ(first.bound_pus, sysfs.bound_pus);
  EXPECT_EQ(cores, topo::sysfs::pus_of_cores());
  EXPECT_EQ(kind, topo::sysfs::host_kind());
  EXPECT_GE(first.pus, 1);
}

}  // namespace
