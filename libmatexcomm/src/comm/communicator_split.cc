// communicator_split.cc - sub-communicators over a list of ranks, created by
// the members only (MPI_Comm_create_group on the private creation duplicate,
// which no other thread's collectives use), with the parent's node layout
// restricted to the members, and its host figures.
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "core/error.h"
#include "core/mpi_handles.h"

namespace matexcomm {

namespace {

// Distinct, in range, and listing the caller; returns the caller's new rank.
int check_member_list(const std::vector<int>& ranks, int parent_size, int me) {
  const int n = static_cast<int>(ranks.size());
  MATEX_REQUIRE(n >= 1, MATEX_ERR_INVALID_ARG, "n = " + std::to_string(n) + " must be at least 1");
  // Distinct and in range also bounds n by the parent's size.
  std::vector<int> index_of(parent_size, -1);
  int my_index = -1;
  for (int i = 0; i < n; ++i) {
    const int r = ranks[i];
    const std::string which = "ranks[" + std::to_string(i) + "] = " + std::to_string(r);
    MATEX_REQUIRE(r >= 0 && r < parent_size, MATEX_ERR_INVALID_ARG,
                  which + " is not a rank of the parent (size " + std::to_string(parent_size) + ")");
    MATEX_REQUIRE(index_of[r] < 0, MATEX_ERR_INVALID_ARG,
                  which + " repeats ranks[" + std::to_string(index_of[r]) + "]; the ranks must be distinct");
    index_of[r] = i;
    if (r == me) my_index = i;
  }
  MATEX_REQUIRE(my_index >= 0, MATEX_ERR_INVALID_ARG,
                "ranks does not list the calling rank " + std::to_string(me) +
                    "; only the members call matex_comm_create_from_ranks");
  return my_index;
}

}  // namespace

std::unique_ptr<Communicator> Communicator::create_from_ranks(const std::vector<int>& ranks) const {
  const int my_index = check_member_list(ranks, layout_.world_size, layout_.world_rank);
  const topo::Layout layout = topo::restrict_layout(layout_, ranks, my_index);
  UniqueComm members;
  {
    std::lock_guard<std::mutex> lock(creation_mutex_);
    MPI_Group parent_group = MPI_GROUP_NULL;
    check_mpi(MPI_Comm_group(creation_.get(), &parent_group), "MPI_Comm_group");
    MPI_Group member_group = MPI_GROUP_NULL;
    int rc = MPI_Group_incl(parent_group, static_cast<int>(ranks.size()), ranks.data(), &member_group);
    MPI_Group_free(&parent_group);
    check_mpi(rc, "MPI_Group_incl");
    MPI_Comm created = MPI_COMM_NULL;
    rc = MPI_Comm_create_group(creation_.get(), member_group, 0, &created);
    MPI_Group_free(&member_group);
    check_mpi(rc, "MPI_Comm_create_group");
    members = UniqueComm(created);
  }
  MATEX_REQUIRE(members.valid() && members.rank() == my_index, MATEX_ERR_INTERNAL,
                "MPI_Comm_create_group gave this rank a different position than its index in ranks");
  // The communicator duplicates `members`; ours is freed on return. Its ranks
  // share cores with the parent's others, so it takes the parent's host figures.
  return std::make_unique<Communicator>(members.get(), layout, host_);
}

}  // namespace matexcomm
