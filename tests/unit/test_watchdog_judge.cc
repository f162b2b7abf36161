// Unit tests of the collective watchdog's verdict (judge_probes, comm/watchdog_verdict.h): from the probes' answers
// (or their absence) it must name the host at fault, or this host when it reaches none of the others.
// The probes themselves run across real hosts in tests/cluster (fault_test.sh).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "comm/watchdog_verdict.h"

namespace matexcomm {
namespace {

// `hosts` nodes of one rank each, seen from rank `me`.
topo::Layout one_rank_per_host(int hosts, int me) {
  topo::Layout layout;
  layout.world_rank = me;
  layout.world_size = hosts;
  layout.node_index = me;
  layout.node_count = hosts;
  for (int r = 0; r < hosts; ++r) {
    layout.node_of_rank.push_back(r);
    layout.local_rank_of_rank.push_back(0);
    layout.node_sizes.push_back(1);
    layout.node_hosts.push_back("h" + std::to_string(r + 1) + "/0d1c");
  }
  return layout;
}

using Probes = std::vector<ProbeAnswer>;

TEST(WatchdogJudge, NamesTheHostThatDoesNotAnswer) {
  const std::string verdict = judge_probes(Probes{{1, 0.004}, {2, -1}}, one_rank_per_host(3, 0));
  EXPECT_NE(verdict.find("h3 (rank 2) does not answer while the other hosts do"), std::string::npos) << verdict;
  EXPECT_EQ(verdict.find("h2 (rank 1) does"), std::string::npos) << verdict;
}

TEST(WatchdogJudge, NamesItselfWhenItReachesNoOtherHost) {
  const std::string verdict = judge_probes(Probes{{0, -1}, {1, -1}}, one_rank_per_host(3, 2));
  EXPECT_NE(verdict.find("this host (h3) reaches none of the other hosts"), std::string::npos) << verdict;
}

TEST(WatchdogJudge, WithOneOtherHostCannotTellWhichEndIsDown) {
  const std::string verdict = judge_probes(Probes{{1, -1}}, one_rank_per_host(2, 0));
  EXPECT_NE(verdict.find("h2 (rank 1) does not answer: it, or the link between it and this host (h1)"),
            std::string::npos)
      << verdict;
}

TEST(WatchdogJudge, OnlySilenceCountsWhenTheProbesCarriedNoPayload) {
  // At the timeout the probes only ask who is there: a late answer from a busy host is still an answer.
  const std::string verdict =
      judge_probes(Probes{{1, 0.096}, {2, -1}}, one_rank_per_host(3, 0), /*timed=*/false);
  EXPECT_NE(verdict.find("h3 (rank 2) does not answer while the other hosts do"), std::string::npos) << verdict;
}

TEST(WatchdogJudge, NamesTheSlowHost) {
  const std::string verdict = judge_probes(Probes{{0, 0.011}, {2, 0.4}}, one_rank_per_host(3, 1));
  EXPECT_NE(verdict.find("h3 (rank 2) answers slowly while the others are prompt"), std::string::npos) << verdict;
}

TEST(WatchdogJudge, NamesItsOwnLinkWhenEveryOtherHostIsSlow) {
  const std::string verdict = judge_probes(Probes{{0, 0.4}, {1, 0.1}}, one_rank_per_host(3, 2));
  EXPECT_NE(verdict.find("this host's (h3) own link is the likely bottleneck"), std::string::npos) << verdict;
}

TEST(WatchdogJudge, AnAnswerHoweverSlowClearsThisHostsLink) {
  const std::string verdict = judge_probes(Probes{{1, -1}, {2, 0.3}}, one_rank_per_host(3, 0));
  EXPECT_NE(verdict.find("h2 (rank 1) does not answer while the other hosts do"), std::string::npos) << verdict;
}

TEST(WatchdogJudge, PromptAnswersBlameNoHost) {
  const std::string verdict = judge_probes(Probes{{0, 0.004}, {2, 0.009}}, one_rank_per_host(3, 1));
  EXPECT_NE(verdict.find("every host answers promptly"), std::string::npos) << verdict;
  EXPECT_EQ(verdict.find("likely"), std::string::npos) << verdict;
}

TEST(WatchdogJudge, NamesNodesOfSeveralRanksAndVirtualNodes) {
  topo::Layout layout = one_rank_per_host(2, 0);
  layout.world_size = 4;
  layout.node_of_rank = {0, 0, 1, 1};
  layout.local_rank_of_rank = {0, 1, 0, 1};
  layout.node_sizes = {2, 2};
  EXPECT_NE(judge_probes(Probes{{1, -1}}, layout).find("h2 (ranks 2,3)"), std::string::npos);
  layout.virtual_nodes = true;
  EXPECT_NE(judge_probes(Probes{{1, -1}}, layout).find("node 1 on h2 (ranks 2,3)"), std::string::npos);
}

}  // namespace
}  // namespace matexcomm
