// groups.cc - node, rail and leader sub-communicators of a layout.
//
//   node:    color = node index, key = local rank  -> my node's ranks by local rank
//   rail:    color = local rank, key = node index  -> one rank per node, by node index
//   leaders: color 0 for local rank 0, else MPI_UNDEFINED (no communicator)
#include <string>

#include "core/error.h"
#include "topology/layout.h"

namespace matexcomm::topo {

Groups split_groups(MPI_Comm comm, const Layout& layout) {
  int size = 0;
  check_mpi(MPI_Comm_size(comm, &size), "MPI_Comm_size");
  MATEX_REQUIRE(size == layout.world_size, MATEX_ERR_INVALID_ARG,
                "split_groups: the communicator has " + std::to_string(size) +
                    " ranks but the layout describes " + std::to_string(layout.world_size));
  Groups groups;
  groups.node = UniqueComm::split(comm, layout.node_index, layout.local_rank);
  groups.rail = UniqueComm::split(comm, layout.local_rank, layout.node_index);
  groups.leaders =
      UniqueComm::split(comm, layout.local_rank == 0 ? 0 : MPI_UNDEFINED, layout.node_index);
  return groups;
}

}  // namespace matexcomm::topo
