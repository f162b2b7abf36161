// mpi_test_util.cc - the shared test communicator, scratch buffers and the
// cross-rank agreement on error counts (see mpi_test_util.h).
#include "mpi_test_util.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <memory>

#include "matexcomm/matexcomm_mpi.h"

namespace matex_test {

namespace {
matex_comm_t g_comm = nullptr;

struct Slot {
  std::unique_ptr<uint64_t[]> words;  // uint64_t: 8-byte alignment for every dtype
  size_t bytes = 0;
};
Slot g_slots[4];
}  // namespace

matex_comm_t test_comm() {
  if (g_comm == nullptr) {
    matex_status_t status = matex_init_mpi(MPI_COMM_WORLD, &g_comm);
    if (status != MATEX_SUCCESS) {
      // Every rank reads the same environment, so every rank ends up here.
      std::fprintf(stderr, "[rank %d] matex_init_mpi failed: %s: %s\n", world_rank(), matex_status_string(status),
                   matex_last_error());
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
  }
  return g_comm;
}

void release_test_comm() {
  if (g_comm != nullptr) matex_finalize(&g_comm);
}

int world_rank() {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

int world_size() {
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return size;
}

void* scratch_bytes(int slot, size_t bytes) {
  Slot& s = g_slots[slot];
  if (bytes > s.bytes || !s.words) {
    size_t words = (bytes + 7) / 8 + 1;
    s.words.reset(new uint64_t[words]);
    s.bytes = words * 8;
  }
  return s.words.get();
}

void agree_no_errors(long long local_errors, const std::string& what) {
  const int size = world_size();
  std::vector<long long> per_rank(size, 0);
  MPI_Allgather(&local_errors, 1, MPI_LONG_LONG, per_rank.data(), 1, MPI_LONG_LONG, MPI_COMM_WORLD);
  long long total = 0;
  std::string ranks;
  for (int r = 0; r < size; ++r) {
    total += per_rank[r];
    if (per_rank[r] != 0) ranks += " " + std::to_string(r) + "(" + std::to_string(per_rank[r]) + ")";
  }
  EXPECT_EQ(total, 0) << what << ": errors on ranks (rank(count)):" << ranks;
}

std::vector<int> virtual_node_sizes() {
  std::vector<int> sizes;
  const char* spec = std::getenv("MATEX_VIRTUAL_NODES");
  if (spec == nullptr || *spec == '\0') return sizes;
  std::string text(spec);
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string::npos) comma = text.size();
    sizes.push_back(std::atoi(text.substr(start, comma - start).c_str()));
    start = comma + 1;
  }
  return sizes;
}

}  // namespace matex_test
