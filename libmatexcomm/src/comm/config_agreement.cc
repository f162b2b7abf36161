#include "comm/config_agreement.h"

#include <vector>

#include "core/error.h"
#include "core/mpi_handles.h"

namespace matexcomm {

namespace {

std::vector<uint64_t> gather(MPI_Comm comm, const std::vector<uint64_t>& mine) {
  int size = 0;
  check_mpi(MPI_Comm_size(comm, &size), "MPI_Comm_size");
  std::vector<uint64_t> all(mine.size() * size);
  check_mpi(MPI_Allgather(mine.data(), static_cast<int>(mine.size()), MPI_UINT64_T, all.data(),
                          static_cast<int>(mine.size()), MPI_UINT64_T, comm),
            "MPI_Allgather of configuration digests");
  return all;
}

}  // namespace

void agree_on_configuration(MPI_Comm comm, const Config& config, const std::string& local_error) {
  std::vector<const ConfigEntry*> agreed;
  for (const ConfigEntry& entry : config_table()) {
    if (entry.same_on_all_ranks) agreed.push_back(&entry);
  }
  std::vector<uint64_t> mine(1 + agreed.size(), 0);
  mine[0] = local_error.empty() ? 1 : 0;
  if (local_error.empty()) {
    std::vector<uint64_t> digests = config.agreement_digests();
    std::copy(digests.begin(), digests.end(), mine.begin() + 1);
  }
  std::vector<uint64_t> all = gather(comm, mine);
  const size_t stride = mine.size();
  const int ranks = static_cast<int>(all.size() / stride);
  if (!local_error.empty()) MATEX_RAISE(MATEX_ERR_CONFIG, local_error);
  int my_rank = 0;
  check_mpi(MPI_Comm_rank(comm, &my_rank), "MPI_Comm_rank");
  for (int r = 0; r < ranks; ++r) {
    if (all[r * stride] == 0) {
      MATEX_RAISE(MATEX_ERR_CONFIG, "rank " + std::to_string(r) +
                                        " has an invalid MATEX_* setting (its own error names it), so no rank "
                                        "can create the communicator");
    }
  }
  for (size_t v = 0; v < agreed.size(); ++v) {
    for (int r = 0; r < ranks; ++r) {
      if (all[r * stride + 1 + v] != mine[1 + v]) {
        MATEX_RAISE(MATEX_ERR_CONFIG, std::string(agreed[v]->name) + " must be the same on every rank, but rank " +
                                          std::to_string(my_rank) + " has \"" + config.raw(agreed[v]->name) +
                                          "\" and rank " + std::to_string(r) + " has another value");
      }
    }
  }
}

int find_disagreeing_rank(MPI_Comm comm, uint64_t digest, bool* that_rank_invalid) {
  std::vector<uint64_t> all = gather(comm, {digest});
  for (size_t r = 0; r < all.size(); ++r) {
    if (all[r] == 0 || all[r] != all[0]) {
      *that_rank_invalid = all[r] == 0;
      return static_cast<int>(r);
    }
  }
  *that_rank_invalid = false;
  return -1;
}

}  // namespace matexcomm
