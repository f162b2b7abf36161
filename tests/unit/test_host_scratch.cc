// test_host_scratch.cc - HostScratch: keeps its block while it suffices,
// grows on demand, and every byte it hands out is writable (the sanitizer
// build checks the bounds).
#include <gtest/gtest.h>

#include <cstring>

#include "core/host_scratch.h"

namespace matexcomm {
namespace {

TEST(HostScratch, KeepsItsBlockWhileItSuffices) {
  HostScratch scratch;
  char* first = scratch.reserve(4096);
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(scratch.size(), 4096u);
  std::memset(first, 0x5a, 4096);
  EXPECT_EQ(scratch.reserve(100), first);
  EXPECT_EQ(scratch.reserve(4096), first);
  EXPECT_EQ(scratch.size(), 4096u);
  EXPECT_EQ(first[4095], 0x5a);  // a smaller request leaves the contents alone
}

TEST(HostScratch, GrowsToEveryRequest) {
  HostScratch scratch;
  for (size_t bytes : {size_t{1}, size_t{7}, size_t{4097}, size_t{3} << 20}) {
    char* block = scratch.reserve(bytes);
    ASSERT_NE(block, nullptr);
    EXPECT_EQ(scratch.size(), bytes);
    std::memset(block, 1, bytes);
    EXPECT_EQ(block[bytes - 1], 1);
  }
}

TEST(HostScratch, ZeroBytesGivesAUsablePointer) {
  HostScratch scratch;
  EXPECT_NE(scratch.reserve(0), nullptr);
  EXPECT_EQ(scratch.size(), 0u);
}

}  // namespace
}  // namespace matexcomm
