// layout.h - which rank lives on which node: host ids, virtual nodes, and the
// node / rail sub-communicators built from them.
//
// A "node" is a set of ranks that can share memory. A "rail" is the set of
// ranks with the same local rank, one per node that has that local rank.
#pragma once

#include <mpi.h>

#include <string>
#include <vector>

#include "core/mpi_handles.h"

namespace matexcomm::topo {

// Host identity: "<hostname>/<boot id>" (boot id from
// /proc/sys/kernel/random/boot_id when readable), or `override_id` when it is
// not empty (MATEX_HOSTID).
std::string make_host_id(const std::string& override_id);

// Parses MATEX_VIRTUAL_NODES ("2,2", "3,1", "1,1,1,1"): node sizes of
// consecutive world ranks. Throws Error(MATEX_ERR_CONFIG) whose message names
// MATEX_VIRTUAL_NODES, quotes the value, and says what is wrong (empty field,
// not a positive integer, sizes add up to X but the world has Y ranks).
std::vector<int> parse_virtual_nodes(const std::string& spec, int world_size);

struct Layout {
  int world_rank = 0;
  int world_size = 1;
  int node_index = 0;  // nodes are numbered by their lowest world rank
  int node_count = 1;
  int local_rank = 0;
  int local_size = 1;
  bool virtual_nodes = false;            // true when MATEX_VIRTUAL_NODES built it
  std::vector<int> node_of_rank;         // [world_size]
  std::vector<int> local_rank_of_rank;   // [world_size]
  std::vector<int> node_sizes;           // [node_count]
  std::vector<std::string> node_hosts;   // [node_count] host id of each node

  int min_local_size() const;  // smallest node size
  bool uniform() const;        // every node has the same size
};

// Collective over `comm`. Builds the layout from MATEX_VIRTUAL_NODES when
// `virtual_nodes_spec` is non-empty, else from the host ids of all ranks.
// Virtual nodes describe MPI_COMM_WORLD: on any other communicator each member
// lands on the virtual node of its world rank.
Layout discover_layout(MPI_Comm comm, const std::string& virtual_nodes_spec,
                       const std::string& host_id);

// Local (no communication): the layout of rank `rank` when rank r lives on
// node `node_ids[r]`. The ids may be any integers (e.g. the parent's node
// indices of a sub-communicator's members); equal ids mean one node, and nodes
// are renumbered in order of first appearance, so again by lowest rank.
// `host_of_rank[r]` is the host id of rank r's node (same size as node_ids).
// Throws MATEX_ERR_INVALID_ARG when the sizes disagree or rank is out of range.
Layout layout_from_assignment(int rank, const std::vector<int>& node_ids,
                              const std::vector<std::string>& host_of_rank, bool virtual_nodes);

// The layout of a sub-communicator whose rank i is `parent` rank members[i]:
// the parent's nodes restricted to the members (MATEX_VIRTUAL_NODES included),
// seen from member `rank`. Local.
Layout restrict_layout(const Layout& parent, const std::vector<int>& members, int rank);

// Sub-communicators of a layout; all carry MPI_ERRORS_RETURN.
struct Groups {
  UniqueComm node;     // the ranks of my node, ordered by local rank
  UniqueComm rail;     // the ranks with my local rank, ordered by node index
  UniqueComm leaders;  // local rank 0 of every node; invalid on other ranks
};

// Collective over `comm`.
Groups split_groups(MPI_Comm comm, const Layout& layout);

}  // namespace matexcomm::topo
