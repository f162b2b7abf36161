// test_host_id.cc - make_host_id: MATEX_HOSTID wins, otherwise the id is
// "<hostname>/<boot id>" and stable within one boot.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "topology/layout.h"

namespace {

using matexcomm::topo::make_host_id;

std::string this_hostname() {
  char name[256] = {0};
  EXPECT_EQ(gethostname(name, sizeof(name) - 1), 0);
  return name;
}

TEST(HostId, OverrideWins) {
  EXPECT_EQ(make_host_id("rack7-node3"), "rack7-node3");
  EXPECT_EQ(make_host_id("a/b with spaces"), "a/b with spaces");
}

TEST(HostId, DefaultStartsWithTheHostname) {
  std::string id = make_host_id("");
  ASSERT_FALSE(id.empty());
  std::string hostname = this_hostname();
  ASSERT_FALSE(hostname.empty());
  EXPECT_EQ(id.rfind(hostname, 0), 0u) << id;
}

TEST(HostId, DefaultEndsWithTheBootIdWhenReadable) {
  std::ifstream file("/proc/sys/kernel/random/boot_id");
  std::string boot;
  if (!file || !std::getline(file, boot) || boot.empty()) GTEST_SKIP() << "no boot id here";
  EXPECT_EQ(make_host_id(""), this_hostname() + "/" + boot);
}

TEST(HostId, DefaultIsStable) { EXPECT_EQ(make_host_id(""), make_host_id("")); }

}  // namespace
