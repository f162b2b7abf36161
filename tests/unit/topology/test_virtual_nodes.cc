// test_virtual_nodes.cc - parse_virtual_nodes accepts well-formed specs and
// rejects everything else with a message naming MATEX_VIRTUAL_NODES.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/error.h"
#include "topology/layout.h"

namespace {

using matexcomm::Error;
using matexcomm::topo::parse_virtual_nodes;

// The error a bad spec raises; fails the test when nothing is thrown.
Error rejection_of(const std::string& spec, int world_size) {
  try {
    parse_virtual_nodes(spec, world_size);
  } catch (const Error& error) {
    return error;
  }
  ADD_FAILURE() << "\"" << spec << "\" with " << world_size << " ranks was accepted";
  return Error(MATEX_ERR_INTERNAL, "not thrown");
}

TEST(VirtualNodes, AcceptsWellFormedSpecs) {
  EXPECT_EQ(parse_virtual_nodes("2,2", 4), (std::vector<int>{2, 2}));
  EXPECT_EQ(parse_virtual_nodes("3,1", 4), (std::vector<int>{3, 1}));
  EXPECT_EQ(parse_virtual_nodes("1,1,1,1", 4), (std::vector<int>{1, 1, 1, 1}));
  EXPECT_EQ(parse_virtual_nodes("4", 4), (std::vector<int>{4}));
  EXPECT_EQ(parse_virtual_nodes("1", 1), (std::vector<int>{1}));
}

TEST(VirtualNodes, ToleratesBlanksAroundNumbers) {
  EXPECT_EQ(parse_virtual_nodes(" 3 , 1 ", 4), (std::vector<int>{3, 1}));
  EXPECT_EQ(parse_virtual_nodes("\t2,\t2\n", 4), (std::vector<int>{2, 2}));
  EXPECT_EQ(parse_virtual_nodes("007,1", 8), (std::vector<int>{7, 1}));
}

TEST(VirtualNodes, EveryRejectionNamesTheVariableAndQuotesTheValue) {
  const std::vector<std::string> bad = {"",     "2,,2", "2,2,", ",4",   "0,4",         "-1,5",
                                        "x,2",  "2.5,1.5", "1 1,2", "+2,2", "99999999999,1", " , "};
  for (const std::string& spec : bad) {
    Error error = rejection_of(spec, 4);
    EXPECT_EQ(error.status(), MATEX_ERR_CONFIG) << spec;
    EXPECT_NE(error.message().find("MATEX_VIRTUAL_NODES"), std::string::npos) << error.message();
    EXPECT_NE(error.message().find("\"" + spec + "\""), std::string::npos) << error.message();
  }
}

TEST(VirtualNodes, SaysWhichFieldIsWrong) {
  EXPECT_NE(rejection_of("2,,2", 4).message().find("field 2 is empty"), std::string::npos);
  EXPECT_NE(rejection_of("2,2,", 4).message().find("field 3 is empty"), std::string::npos);
  EXPECT_NE(rejection_of("0,4", 4).message().find("zero"), std::string::npos);
  EXPECT_NE(rejection_of("-1,5", 4).message().find("negative"), std::string::npos);
  EXPECT_NE(rejection_of("x,2", 4).message().find("not a positive integer"), std::string::npos);
  EXPECT_NE(rejection_of("99999999999,1", 4).message().find("too large"), std::string::npos);
  EXPECT_NE(rejection_of("2147483648", 4).message().find("too large"), std::string::npos);
}

TEST(VirtualNodes, SizesMustAddUpToTheWorld) {
  std::string message = rejection_of("3,3", 4).message();
  EXPECT_NE(message.find("add up to 6 but the job has 4 ranks"), std::string::npos) << message;
  message = rejection_of("1,1", 4).message();
  EXPECT_NE(message.find("add up to 2 but the job has 4 ranks"), std::string::npos) << message;
  message = rejection_of("2147483647,2147483647", 4).message();
  EXPECT_NE(message.find("add up to 4294967294"), std::string::npos) << message;
}

TEST(VirtualNodes, RejectsANonPositiveWorld) {
  EXPECT_EQ(rejection_of("1", 0).status(), MATEX_ERR_INVALID_ARG);
}

}  // namespace
