// test_thread_budget.cc - split_host_affinities, the per-rank CPU blocks, and
// the MATEX_THREADS parser. Hosts are described by hand: cores as PU lists.
#include <gtest/gtest.h>

#include <set>
#include <vector>

#include "core/error.h"
#include "topology/thread_budget.h"

namespace {

using matexcomm::topo::parse_threads_setting;
using matexcomm::topo::split_host_affinities;
using matexcomm::topo::ThreadBudget;
using Pus = std::vector<int>;

// n cores of `smt` PUs each, numbered as Linux does on x86: core c has PUs c, c+n, ...
std::vector<Pus> host(int n, int smt = 1) {
  std::vector<Pus> cores(n);
  for (int c = 0; c < n; ++c) {
    for (int t = 0; t < smt; ++t) cores[c].push_back(c + t * n);
  }
  return cores;
}

Pus range(int first, int last) {
  Pus pus;
  for (int pu = first; pu <= last; ++pu) pus.push_back(pu);
  return pus;
}

void expect_disjoint(const std::vector<ThreadBudget>& budgets) {
  std::set<int> seen;
  for (const ThreadBudget& b : budgets) {
    for (int pu : b.pus) EXPECT_TRUE(seen.insert(pu).second) << "PU " << pu << " in two blocks";
  }
}

TEST(ThreadBudget, UnboundRanksSplitTheHostEvenly) {
  std::vector<ThreadBudget> b = split_host_affinities({range(0, 7), range(0, 7)}, host(8), 0);
  EXPECT_EQ(b[0].pus, range(0, 3));
  EXPECT_EQ(b[1].pus, range(4, 7));
  for (const ThreadBudget& one : b) {
    EXPECT_TRUE(one.narrowed);
    EXPECT_EQ(one.cores, 4);
    EXPECT_EQ(one.intra_op, 4);
    EXPECT_EQ(one.inter_op, 1);
  }
}

TEST(ThreadBudget, UnevenShareAndLargerBlocksGetTwoInterOpThreads) {
  std::vector<ThreadBudget> b = split_host_affinities({range(0, 10), range(0, 10)}, host(11), 0);
  EXPECT_EQ(b[0].cores, 5);  // 11 cores: 5 and 6, contiguous, in rank order
  EXPECT_EQ(b[1].cores, 6);
  EXPECT_EQ(b[1].pus, range(5, 10));
  EXPECT_EQ(b[0].inter_op, 2);
  expect_disjoint(b);
}

TEST(ThreadBudget, HyperthreadSiblingsStayTogether) {
  // 4 cores with 2 PUs each: core c = {c, c+4}.
  std::vector<ThreadBudget> b = split_host_affinities({range(0, 7), range(0, 7)}, host(4, 2), 0);
  EXPECT_EQ(b[0].pus, (Pus{0, 1, 4, 5}));
  EXPECT_EQ(b[1].pus, (Pus{2, 3, 6, 7}));
  EXPECT_EQ(b[0].cores, 2);
  EXPECT_EQ(b[0].intra_op, 2);  // physical cores, not PUs
}

TEST(ThreadBudget, RanksBoundApartKeepTheirBinding) {
  // Open MPI's -np 2 default on an 8-core host: one core each.
  std::vector<ThreadBudget> b = split_host_affinities({{0}, {1}}, host(8), 0);
  EXPECT_EQ(b[0].pus, Pus{0});
  EXPECT_EQ(b[1].pus, Pus{1});
  EXPECT_FALSE(b[0].narrowed);
  EXPECT_TRUE(b[0].starved);  // its share would be 4 cores
  EXPECT_EQ(b[0].intra_op, 1);
  // On a 2-core host one core each is the share: not starved.
  EXPECT_FALSE(split_host_affinities({{0}, {1}}, host(2), 0)[0].starved);
}

TEST(ThreadBudget, SocketBoundGroupsSplitOnlyTheirSocket) {
  // Two sockets of 4 cores; ranks 0 and 2 bound to socket 0, 1 and 3 to socket 1 (map-by socket).
  std::vector<ThreadBudget> b =
      split_host_affinities({range(0, 3), range(4, 7), range(0, 3), range(4, 7)}, host(8), 0);
  EXPECT_EQ(b[0].pus, range(0, 1));
  EXPECT_EQ(b[2].pus, range(2, 3));
  EXPECT_EQ(b[1].pus, range(4, 5));
  EXPECT_EQ(b[3].pus, range(6, 7));
  expect_disjoint(b);
}

TEST(ThreadBudget, MoreRanksThanCoresShareRoundRobin) {
  std::vector<ThreadBudget> b = split_host_affinities({range(0, 1), range(0, 1), range(0, 1), range(0, 1)},
                                                      host(2), 0);
  EXPECT_EQ(b[0].pus, Pus{0});
  EXPECT_EQ(b[1].pus, Pus{1});
  EXPECT_EQ(b[2].pus, Pus{0});
  EXPECT_EQ(b[3].pus, Pus{1});
  for (const ThreadBudget& one : b) {
    EXPECT_TRUE(one.shared);
    EXPECT_EQ(one.intra_op, 1);
    EXPECT_EQ(one.inter_op, 1);
  }
}

TEST(ThreadBudget, NeverAddsACpuTheRankLacksAndStaysDisjoint) {
  // Rank 1's mask is a subset of rank 0's: it chooses first, inside its mask; rank 0 gets the rest.
  std::vector<ThreadBudget> b = split_host_affinities({range(0, 7), range(0, 3)}, host(8), 0);
  EXPECT_EQ(b[1].pus, range(0, 3));
  EXPECT_EQ(b[0].pus, range(4, 7));
  expect_disjoint(b);
  // A mask narrower than its share: it keeps all of it, and the cores it cannot use go to rank 0.
  std::vector<ThreadBudget> c = split_host_affinities({range(0, 7), range(0, 1)}, host(8), 0);
  EXPECT_EQ(c[1].pus, range(0, 1));
  EXPECT_FALSE(c[1].narrowed);
  EXPECT_EQ(c[0].pus, range(2, 7));
  expect_disjoint(c);
  // Three ranks, one confined to core 5 of a shared 0-7: it gets core 5, the others split the rest.
  std::vector<ThreadBudget> d = split_host_affinities({range(0, 7), range(0, 7), {5}}, host(8), 0);
  EXPECT_EQ(d[2].pus, Pus{5});
  expect_disjoint(d);
  EXPECT_EQ(d[0].pus.size() + d[1].pus.size(), 7u);
}

TEST(ThreadBudget, CoresPerRankSetting) {
  std::vector<ThreadBudget> b = split_host_affinities({range(0, 7), range(0, 7)}, host(8), 2);
  EXPECT_EQ(b[0].pus, range(0, 1));
  EXPECT_EQ(b[1].pus, range(2, 3));
  EXPECT_FALSE(b[0].shared);
  // 2 x 3 cores on a 4-core host: blocks as far as the cores go, still disjoint.
  std::vector<ThreadBudget> wide = split_host_affinities({range(0, 3), range(0, 3)}, host(4), 3);
  EXPECT_EQ(wide[0].pus, range(0, 2));
  EXPECT_EQ(wide[1].pus, Pus{3});
  expect_disjoint(wide);
}

TEST(ThreadBudget, OneRankAndNoRanks) {
  std::vector<ThreadBudget> one = split_host_affinities({range(0, 3)}, host(4), 0);
  EXPECT_EQ(one[0].pus, range(0, 3));
  EXPECT_FALSE(one[0].narrowed);
  EXPECT_EQ(one[0].intra_op, 4);
  EXPECT_TRUE(split_host_affinities({}, host(4), 0).empty());
}

TEST(ThreadBudget, ParsesTheSetting) {
  EXPECT_EQ(parse_threads_setting("auto"), matexcomm::topo::kThreadsAuto);
  EXPECT_EQ(parse_threads_setting(""), matexcomm::topo::kThreadsAuto);
  EXPECT_EQ(parse_threads_setting("off"), matexcomm::topo::kThreadsOff);
  EXPECT_EQ(parse_threads_setting("3"), 3);
  for (const char* bad : {"0", "-2", "two", "3x", " 3"}) {
    try {
      parse_threads_setting(bad);
      ADD_FAILURE() << "accepted " << bad;
    } catch (const matexcomm::Error& error) {
      EXPECT_EQ(error.status(), MATEX_ERR_CONFIG);
      EXPECT_NE(error.message().find("MATEX_THREADS"), std::string::npos);
    }
  }
}

}  // namespace
