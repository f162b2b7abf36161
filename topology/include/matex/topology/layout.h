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
Layout discover_layout(MPI_Comm comm, const std::string& virtual_nodes_spec,
                       const std::string& host_id);

// Sub-communicators of a layout; all carry MPI_ERRORS_RETURN.
struct Groups {
  UniqueComm node;     // the ranks of my node, ordered by local rank
  UniqueComm rail;     // the ranks with my local rank, ordered by node index
  UniqueComm leaders;  // local rank 0 of every node; invalid on other ranks
};

// Collective over `comm`.
Groups split_groups(MPI_Comm comm, const Layout& layout);

}  // namespace matexcomm::topo
