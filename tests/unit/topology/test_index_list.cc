// test_index_list.cc - format_index_list, the "0-3,8" formatter behind the
// PU, core and NUMA lists. Includes the library's private header directly.
#include <gtest/gtest.h>

#include "topology/index_list.h"

namespace {

using matexcomm::topo::format_index_list;

TEST(IndexList, FormatsRunsAndSingles) {
  EXPECT_EQ(format_index_list({}), "");
  EXPECT_EQ(format_index_list({5}), "5");
  EXPECT_EQ(format_index_list({0, 1, 2, 3, 8}), "0-3,8");
  EXPECT_EQ(format_index_list({0, 2, 4}), "0,2,4");
  EXPECT_EQ(format_index_list({0, 1, 3, 4, 6}), "0-1,3-4,6");
}

TEST(IndexList, SortsAndDropsDuplicates) {
  EXPECT_EQ(format_index_list({8, 3, 2, 1, 0, 2}), "0-3,8");
  EXPECT_EQ(format_index_list({7, 7, 7}), "7");
}

TEST(IndexList, ParsesWhatTheKernelWrites) {
  using matexcomm::topo::parse_index_list;
  EXPECT_EQ(parse_index_list(""), std::vector<int>{});
  EXPECT_EQ(parse_index_list("5"), std::vector<int>{5});
  EXPECT_EQ(parse_index_list("0-3,8"), (std::vector<int>{0, 1, 2, 3, 8}));
  EXPECT_EQ(parse_index_list("8,0-1,1"), (std::vector<int>{0, 1, 8}));  // sorted, no repeats
  EXPECT_EQ(parse_index_list("0-1,x,4"), (std::vector<int>{0, 1}));     // stops at what is not a list
  for (const char* text : {"0-3,8", "0,2,4", "0-1,3-4,6", "17"}) {
    EXPECT_EQ(format_index_list(parse_index_list(text)), text);
  }
}

}  // namespace
