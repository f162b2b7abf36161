// Unit tests of the algorithm catalog (core/algorithm_catalog.h): every name
// is written once and found by name and by id, the ids are the fixed ones,
// and the config table's choices and matex_set_algorithm's names come from it.
// (algorithms/algorithm_table.cc checks its functions against the ids at
// compile time.)
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "core/algorithm_catalog.h"
#include "core/config.h"

namespace matexcomm {
namespace {

const matex_collective_t kChoosable[] = {MATEX_COLL_ALLREDUCE, MATEX_COLL_BROADCAST, MATEX_COLL_ALLGATHER,
                                         MATEX_COLL_REDUCE_SCATTER};

TEST(AlgorithmCatalog, NamesAndIdsAreUniqueAndFoundBothWays) {
  for (matex_collective_t coll : kChoosable) {
    std::set<std::string> names;
    std::set<int> ids;
    for (const AlgorithmInfo& info : algorithm_catalog(coll)) {
      EXPECT_TRUE(names.insert(info.name).second) << info.name;
      EXPECT_TRUE(ids.insert(info.id).second) << info.name;
      EXPECT_EQ(find_algorithm(coll, info.name), info.id);
      EXPECT_STREQ(algorithm_info(coll, info.id).name, info.name);
      EXPECT_GT(std::string(info.cost).size(), 10u) << info.name;
      EXPECT_GT(std::string(info.preconditions).size(), 3u) << info.name;
    }
    EXPECT_EQ(names.count("auto"), 0u) << "auto is no algorithm";
    EXPECT_EQ(find_algorithm(coll, "no_such_algorithm"), -1);
    EXPECT_THROW(algorithm_info(coll, 99), std::out_of_range);
  }
  EXPECT_TRUE(algorithm_catalog(MATEX_COLL_REDUCE).empty());
  EXPECT_TRUE(algorithm_names(MATEX_COLL_REDUCE).empty());
}

TEST(AlgorithmCatalog, IdsAreTheOnesTheSharedMemoryDescriptorsCarry) {
  // Fixed for good: a descriptor's id tells ranks that chose differently apart.
  EXPECT_EQ(find_algorithm(MATEX_COLL_ALLREDUCE, "flat"), 0);
  EXPECT_EQ(find_algorithm(MATEX_COLL_ALLREDUCE, "rs_ar_ag"), 1);
  EXPECT_EQ(find_algorithm(MATEX_COLL_ALLREDUCE, "rab"), 2);
  EXPECT_EQ(find_algorithm(MATEX_COLL_ALLREDUCE, "rs_ar_ag_cma"), 3);
  EXPECT_EQ(find_algorithm(MATEX_COLL_ALLREDUCE, "oneshot"), 4);
  EXPECT_EQ(find_algorithm(MATEX_COLL_BROADCAST, "flat"), 0);
  EXPECT_EQ(find_algorithm(MATEX_COLL_BROADCAST, "hier"), 1);
}

TEST(AlgorithmCatalog, ConfigChoicesAreAutoAndEveryName) {
  std::string expected = "auto";
  for (const AlgorithmInfo& info : algorithm_catalog(MATEX_COLL_ALLREDUCE)) expected += std::string("|") + info.name;
  EXPECT_EQ(algorithm_choices(MATEX_COLL_ALLREDUCE), expected);
  bool found = false;
  for (const ConfigEntry& entry : config_table()) {
    if (std::string(entry.name) != "MATEX_ALLREDUCE_ALGO") continue;
    found = true;
    EXPECT_EQ(std::string(entry.choices), expected);
  }
  EXPECT_TRUE(found);
  const std::vector<std::string> names = algorithm_names(MATEX_COLL_ALLREDUCE);
  ASSERT_FALSE(names.empty());
  EXPECT_EQ(names.front(), "auto");
  EXPECT_EQ(names.size(), algorithm_catalog(MATEX_COLL_ALLREDUCE).size() + 1);
}

}  // namespace
}  // namespace matexcomm
