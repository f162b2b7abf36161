// layout_assignment.cc - layouts from node assignments that are already known
// (no exchange): the building block of sub-communicators, whose node layout is
// their parent's restricted to the members rather than a fresh discovery.
#include <map>
#include <string>
#include <vector>

#include "core/error.h"
#include "topology/layout.h"

namespace matexcomm::topo {

Layout layout_from_assignment(int rank, const std::vector<int>& node_ids,
                              const std::vector<std::string>& host_of_rank, bool virtual_nodes) {
  const int size = static_cast<int>(node_ids.size());
  MATEX_REQUIRE(size > 0 && host_of_rank.size() == node_ids.size(), MATEX_ERR_INVALID_ARG,
                "layout_from_assignment: " + std::to_string(node_ids.size()) + " node ids but " +
                    std::to_string(host_of_rank.size()) + " host ids");
  MATEX_REQUIRE(rank >= 0 && rank < size, MATEX_ERR_INVALID_ARG,
                "layout_from_assignment: rank " + std::to_string(rank) + " is outside 0.." +
                    std::to_string(size - 1));
  Layout layout;
  layout.world_rank = rank;
  layout.world_size = size;
  layout.virtual_nodes = virtual_nodes;
  layout.node_of_rank.assign(size, 0);
  layout.local_rank_of_rank.assign(size, 0);
  std::map<int, int> renumbered;  // given id -> node index by first appearance
  for (int r = 0; r < size; ++r) {
    auto inserted = renumbered.emplace(node_ids[r], static_cast<int>(layout.node_sizes.size()));
    if (inserted.second) {
      layout.node_sizes.push_back(0);
      layout.node_hosts.push_back(host_of_rank[r]);
    }
    const int node = inserted.first->second;
    layout.node_of_rank[r] = node;
    layout.local_rank_of_rank[r] = layout.node_sizes[node]++;
  }
  layout.node_count = static_cast<int>(layout.node_sizes.size());
  layout.node_index = layout.node_of_rank[rank];
  layout.local_rank = layout.local_rank_of_rank[rank];
  layout.local_size = layout.node_sizes[layout.node_index];
  return layout;
}

Layout restrict_layout(const Layout& parent, const std::vector<int>& members, int rank) {
  std::vector<int> node_ids;
  std::vector<std::string> hosts;
  for (int member : members) {
    MATEX_REQUIRE(member >= 0 && member < parent.world_size, MATEX_ERR_INVALID_ARG,
                  "restrict_layout: member " + std::to_string(member) + " is not a rank of the parent (size " +
                      std::to_string(parent.world_size) + ")");
    const int node = parent.node_of_rank[member];
    node_ids.push_back(node);
    hosts.push_back(node < static_cast<int>(parent.node_hosts.size()) ? parent.node_hosts[node] : std::string());
  }
  return layout_from_assignment(rank, node_ids, hosts, parent.virtual_nodes);
}

}  // namespace matexcomm::topo
