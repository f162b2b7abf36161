// count_agreement.h - how the v-variants (gatherv, scatterv, alltoallv) make
// every rank agree that the counts match before moving data: one small
// exchange of counts, after which every rank raises the same error (naming the
// rank at fault) or none does, so a mismatch never truncates data or leaves a
// rank waiting. A rank whose own arguments are bad raises its own message; the
// others are told which rank it was.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/error.h"
#include "matexcomm/matexcomm.h"

namespace matexcomm {

// A failure found by local checks, kept until every rank has been told.
struct LocalProblem {
  matex_status_t status = MATEX_SUCCESS;
  std::string message;
  bool ok() const { return status == MATEX_SUCCESS; }
};

// Runs checks(); an Error it throws becomes the returned problem.
template <class Checks>
LocalProblem check_locally(Checks&& checks) {
  try {
    checks();
  } catch (const Error& error) {
    return {error.status(), error.message()};
  }
  return {};
}

// Rooted form. Every rank sends `my_count` to root (its problem instead, when
// it has one); at root, judge(counts) returns the verdict on the counts of all
// ranks (counts[r] = rank r's count), and root_problem is root's own. Root
// broadcasts one verdict; every rank raises it (its own problem first).
using RootedJudge = std::function<LocalProblem(const std::vector<uint64_t>& counts)>;
void agree_rooted_counts(MPI_Comm comm, int root, uint64_t my_count, const LocalProblem& mine,
                         const RootedJudge& judge_at_root, const char* call);

// All-to-all form: rank r sends sendcounts[j] to rank j, which expects
// recvcounts[r]. sendcounts and recvcounts: `size` entries, or null when `mine`
// is not ok. Raises on every rank when any pair disagrees.
void agree_alltoall_counts(MPI_Comm comm, const size_t* sendcounts, const size_t* recvcounts,
                           const LocalProblem& mine, const char* call);

}  // namespace matexcomm
