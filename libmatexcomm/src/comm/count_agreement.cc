#include "comm/count_agreement.h"

#include <algorithm>
#include <cstring>

#include "core/mpi_handles.h"

namespace matexcomm {

namespace {

// What root broadcasts: a status and its message, the same bytes everywhere.
struct Verdict {
  int64_t status = MATEX_SUCCESS;
  char message[504] = {};
};
static_assert(sizeof(Verdict) == 512, "sent as raw bytes");

Verdict make_verdict(const LocalProblem& problem) {
  Verdict verdict;
  verdict.status = problem.status;
  const size_t length = std::min(problem.message.size(), sizeof verdict.message - 1);
  std::memcpy(verdict.message, problem.message.data(), length);
  return verdict;
}

std::string rejected_by(int rank, const char* call) {
  return std::string(call) + ": rank " + std::to_string(rank) +
         " rejected its own arguments (its error names the argument); no rank moved any data";
}

}  // namespace

void agree_rooted_counts(MPI_Comm comm, int root, uint64_t my_count, const LocalProblem& mine,
                         const RootedJudge& judge_at_root, const char* call) {
  int rank = 0;
  int size = 0;
  check_mpi(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
  check_mpi(MPI_Comm_size(comm, &size), "MPI_Comm_size");
  const uint64_t record[2] = {static_cast<uint64_t>(mine.status), my_count};
  std::vector<uint64_t> records(rank == root ? 2 * static_cast<size_t>(size) : 0);
  check_mpi(MPI_Gather(record, 2, MPI_UINT64_T, records.data(), 2, MPI_UINT64_T, root, comm),
            "MPI_Gather of counts");
  Verdict verdict;
  if (rank == root) {
    LocalProblem decided;
    if (!mine.ok()) {
      decided = {mine.status, std::string(call) + ": the root (rank " + std::to_string(root) +
                                  ") rejected its own arguments: " + mine.message + "; no rank moved any data"};
    }
    for (int r = 0; r < size && decided.ok(); ++r) {
      if (records[2 * r] != MATEX_SUCCESS) decided = {static_cast<matex_status_t>(records[2 * r]), rejected_by(r, call)};
    }
    if (decided.ok()) {
      std::vector<uint64_t> counts(size);
      for (int r = 0; r < size; ++r) counts[r] = records[2 * r + 1];
      decided = judge_at_root(counts);
    }
    verdict = make_verdict(decided);
  }
  check_mpi(MPI_Bcast(&verdict, sizeof verdict, MPI_BYTE, root, comm), "MPI_Bcast of the count verdict");
  if (!mine.ok()) MATEX_RAISE(mine.status, mine.message);
  if (verdict.status != MATEX_SUCCESS) {
    MATEX_RAISE(static_cast<matex_status_t>(verdict.status), std::string(verdict.message));
  }
}

void agree_alltoall_counts(MPI_Comm comm, const size_t* sendcounts, const size_t* recvcounts,
                           const LocalProblem& mine, const char* call) {
  int rank = 0;
  int size = 0;
  check_mpi(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
  check_mpi(MPI_Comm_size(comm, &size), "MPI_Comm_size");
  std::vector<uint64_t> outgoing(size, 0);
  if (mine.ok()) {
    for (int j = 0; j < size; ++j) outgoing[j] = sendcounts[j];
  }
  std::vector<uint64_t> incoming(size, 0);
  check_mpi(MPI_Alltoall(outgoing.data(), 1, MPI_UINT64_T, incoming.data(), 1, MPI_UINT64_T, comm),
            "MPI_Alltoall of counts");
  // {own status, first sender whose count differs (or -1), what it sends, what this rank expects}
  int64_t record[4] = {mine.status, -1, 0, 0};
  if (mine.ok()) {
    for (int r = 0; r < size; ++r) {
      if (incoming[r] != recvcounts[r]) {
        record[1] = r;
        record[2] = static_cast<int64_t>(incoming[r]);
        record[3] = static_cast<int64_t>(recvcounts[r]);
        break;
      }
    }
  }
  std::vector<int64_t> records(4 * static_cast<size_t>(size));
  check_mpi(MPI_Allgather(record, 4, MPI_INT64_T, records.data(), 4, MPI_INT64_T, comm),
            "MPI_Allgather of count checks");
  if (!mine.ok()) MATEX_RAISE(mine.status, mine.message);
  for (int j = 0; j < size; ++j) {
    if (records[4 * j] != MATEX_SUCCESS) MATEX_RAISE(static_cast<matex_status_t>(records[4 * j]), rejected_by(j, call));
  }
  for (int j = 0; j < size; ++j) {
    const int64_t sender = records[4 * j + 1];
    if (sender < 0) continue;
    MATEX_RAISE(MATEX_ERR_MISMATCH,
                std::string(call) + ": rank " + std::to_string(sender) + " sends " +
                    std::to_string(records[4 * j + 2]) + " elements to rank " + std::to_string(j) +
                    ", but rank " + std::to_string(j) + " expects recvcounts[" + std::to_string(sender) +
                    "] = " + std::to_string(records[4 * j + 3]) + "; no rank moved any data");
  }
}

}  // namespace matexcomm
