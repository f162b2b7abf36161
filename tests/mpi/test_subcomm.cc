// test_subcomm.cc - matex_comm_create_from_ranks: members-only creation in
// several shapes (rank order differing from the parent's), collectives on the
// result checked exactly, the node layout derived from the parent's
// (MATEX_VIRTUAL_NODES restricted to the members, not parsed again), creation
// while another thread runs collectives on the parent, bad rank lists
// rejected naming the index, and a communicator over some of the job's ranks
// counting the others on its cores.
#include <gtest/gtest.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <thread>
#include <vector>

#include "error_checks.h"
#include "matexcomm/matexcomm_mpi.h"
#include "mpi_test_util.h"
#include "rooted_patterns.h"

namespace matex_test {
namespace {

// Node of each parent rank: MATEX_VIRTUAL_NODES, or one real node.
std::vector<int> parent_nodes() {
  const int size = world_size();
  std::vector<int> nodes(size, 0);
  const std::vector<int> sizes = virtual_node_sizes();
  int rank = 0;
  for (int node = 0; node < static_cast<int>(sizes.size()); ++node) {
    for (int k = 0; k < sizes[node] && rank < size; ++k) nodes[rank++] = node;
  }
  return nodes;
}

// The shapes of the test: on 4 ranks {0,2}, {1,3}, {3}, {3,0,1}.
std::vector<std::vector<int>> shapes() {
  const int size = world_size();
  std::vector<std::vector<int>> result;
  std::vector<int> even, odd;
  for (int r = 0; r < size; ++r) (r % 2 == 0 ? even : odd).push_back(r);
  result.push_back(even);
  if (!odd.empty()) result.push_back(odd);
  result.push_back({size - 1});
  std::vector<int> rotated = {size - 1};
  for (int r = 0; r < std::min(size - 1, 2); ++r) rotated.push_back(r);
  result.push_back(rotated);
  return result;
}

std::string shape_text(const std::vector<int>& ranks) {
  std::string text = "{";
  for (size_t i = 0; i < ranks.size(); ++i) text += (i ? "," : "") + std::to_string(ranks[i]);
  return text + "}";
}

// Layout facts and exact collectives on a sub-communicator whose rank i is parent rank ranks[i].
long long check_subcomm(matex_comm_t sub, const std::vector<int>& ranks) {
  const int n = static_cast<int>(ranks.size());
  const int me = static_cast<int>(std::find(ranks.begin(), ranks.end(), world_rank()) - ranks.begin());
  const std::string what = "sub-communicator " + shape_text(ranks);
  long long errors = 0;
  int rank = -1, size = -1, node_count = -1, local_size = -1, node_index = -1, local_rank = -1;
  EXPECT_EQ(matex_comm_rank(sub, &rank), MATEX_SUCCESS);
  EXPECT_EQ(matex_comm_size(sub, &size), MATEX_SUCCESS);
  EXPECT_EQ(matex_comm_node_count(sub, &node_count), MATEX_SUCCESS);
  EXPECT_EQ(matex_comm_local_size(sub, &local_size), MATEX_SUCCESS);
  EXPECT_EQ(matex_comm_node_index(sub, &node_index), MATEX_SUCCESS);
  EXPECT_EQ(matex_comm_local_rank(sub, &local_rank), MATEX_SUCCESS);
  // Expected layout: the parent's nodes of the members, renumbered by first appearance.
  const std::vector<int> nodes = parent_nodes();
  std::map<int, int> renumbered;
  std::vector<int> node_size;
  int my_node = -1, my_local = -1;
  for (int i = 0; i < n; ++i) {
    auto inserted = renumbered.emplace(nodes[ranks[i]], static_cast<int>(node_size.size()));
    if (inserted.second) node_size.push_back(0);
    const int node = inserted.first->second;
    if (i == me) {
      my_node = node;
      my_local = node_size[node];
    }
    ++node_size[node];
  }
  EXPECT_EQ(rank, me) << what;
  EXPECT_EQ(size, n) << what;
  EXPECT_EQ(node_count, static_cast<int>(node_size.size())) << what;
  EXPECT_EQ(node_index, my_node) << what;
  EXPECT_EQ(local_rank, my_local) << what;
  EXPECT_EQ(local_size, my_node >= 0 ? node_size[my_node] : -1) << what;
  errors += rank != me || size != n || node_count != static_cast<int>(node_size.size()) || node_index != my_node ||
            local_rank != my_local;

  // allreduce: inputs by parent rank, so the reference needs the member list.
  constexpr size_t kCount = 1003;
  std::vector<int32_t> in(kCount), out(kCount, -1);
  for (size_t i = 0; i < kCount; ++i) in[i] = static_cast<int32_t>(rooted_value(i, world_rank(), false));
  matex_status_t status = matex_allreduce(sub, in.data(), out.data(), kCount, MATEX_INT32, MATEX_SUM);
  EXPECT_EQ(status, MATEX_SUCCESS) << what << " allreduce: " << matex_last_error();
  errors += status != MATEX_SUCCESS;
  for (size_t i = 0; i < kCount && status == MATEX_SUCCESS; ++i) {
    int64_t want = 0;
    for (int member : ranks) want += rooted_value(i, member, false);
    if (out[i] != want) {
      ADD_FAILURE() << what << " allreduce [" << i << "] got " << out[i] << ", expected " << want;
      ++errors;
      break;
    }
  }
  // broadcast from the last member, and a reduce to it.
  const int root = n - 1;
  std::vector<float> data(kCount);
  for (size_t i = 0; i < kCount; ++i) data[i] = static_cast<float>(me == root ? rooted_value(i, 99, false) : -50);
  status = matex_broadcast(sub, data.data(), kCount, MATEX_FLOAT32, root);
  EXPECT_EQ(status, MATEX_SUCCESS) << what << " broadcast: " << matex_last_error();
  for (size_t i = 0; i < kCount && status == MATEX_SUCCESS; ++i) {
    if (data[i] != rooted_value(i, 99, false)) {
      ADD_FAILURE() << what << " broadcast [" << i << "] got " << data[i];
      ++errors;
      break;
    }
  }
  std::vector<float> reduced(kCount, -1);
  for (size_t i = 0; i < kCount; ++i) data[i] = static_cast<float>(rooted_value(i, world_rank(), false));
  status = matex_reduce(sub, data.data(), reduced.data(), kCount, MATEX_FLOAT32, MATEX_MAX, root);
  EXPECT_EQ(status, MATEX_SUCCESS) << what << " reduce: " << matex_last_error();
  if (me == root && status == MATEX_SUCCESS) {
    for (size_t i = 0; i < kCount; ++i) {
      int64_t want = -1000;
      for (int member : ranks) want = std::max(want, rooted_value(i, member, false));
      if (reduced[i] != want) {
        ADD_FAILURE() << what << " reduce [" << i << "] got " << reduced[i] << ", expected " << want;
        ++errors;
        break;
      }
    }
  }
  return errors;
}

TEST(SubCommunicators, MembersOnlyInSeveralShapes) {
  matex_comm_t parent = test_comm();
  long long errors = 0;
  for (const std::vector<int>& ranks : shapes()) {
    if (std::find(ranks.begin(), ranks.end(), world_rank()) == ranks.end()) continue;
    matex_comm_t sub = nullptr;
    const matex_status_t status =
        matex_comm_create_from_ranks(parent, ranks.data(), static_cast<int>(ranks.size()), &sub);
    EXPECT_EQ(status, MATEX_SUCCESS) << shape_text(ranks) << ": " << matex_last_error();
    if (status != MATEX_SUCCESS) {
      ++errors;
      continue;
    }
    errors += check_subcomm(sub, ranks);
    EXPECT_EQ(matex_finalize(&sub), MATEX_SUCCESS) << matex_last_error();
  }
  agree_no_errors(errors, "sub-communicator shapes");
}

TEST(SubCommunicators, CreatedWhileTheParentRunsCollectives) {
  matex_comm_t parent = test_comm();
  const int size = world_size();
  std::atomic<long long> collective_errors{0};
  std::thread collectives([&] {
    std::vector<float> in(513), out(513);
    for (int k = 0; k < 40; ++k) {
      for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>((i + k) % 9);
      if (matex_allreduce(parent, in.data(), out.data(), in.size(), MATEX_FLOAT32, MATEX_SUM) != MATEX_SUCCESS) {
        ++collective_errors;
        continue;
      }
      for (size_t i = 0; i < in.size(); ++i) collective_errors += out[i] != static_cast<float>(((i + k) % 9) * size);
    }
  });
  // Every rank, in reverse order.
  std::vector<int> reversed(size);
  for (int r = 0; r < size; ++r) reversed[r] = size - 1 - r;
  matex_comm_t sub = nullptr;
  const matex_status_t status = matex_comm_create_from_ranks(parent, reversed.data(), size, &sub);
  EXPECT_EQ(status, MATEX_SUCCESS) << matex_last_error();
  long long errors = status != MATEX_SUCCESS;
  if (status == MATEX_SUCCESS) errors += check_subcomm(sub, reversed);
  collectives.join();
  if (sub != nullptr) {
    EXPECT_EQ(matex_finalize(&sub), MATEX_SUCCESS) << matex_last_error();
  }
  EXPECT_EQ(collective_errors.load(), 0) << "allreduces on the parent beside the creation";
  agree_no_errors(errors + collective_errors.load(), "sub-communicator beside parent collectives");
}

TEST(SubCommunicators, BadRankListsNameTheIndex) {
  matex_comm_t parent = test_comm();
  const int size = world_size();
  const int me = world_rank();
  long long errors = 0;
  matex_comm_t sub = nullptr;
  const int repeated[2] = {me, me};
  errors += expect_error(matex_comm_create_from_ranks(parent, repeated, 2, &sub), MATEX_ERR_INVALID_ARG, "ranks[1]",
                         "repeated rank");
  const int outside[2] = {me, size};
  errors += expect_error(matex_comm_create_from_ranks(parent, outside, 2, &sub), MATEX_ERR_INVALID_ARG, "ranks[1]",
                         "rank out of range");
  const int negative[1] = {-1};
  errors += expect_error(matex_comm_create_from_ranks(parent, negative, 1, &sub), MATEX_ERR_INVALID_ARG, "ranks[0]",
                         "negative rank");
  errors += expect_error(matex_comm_create_from_ranks(parent, repeated, 0, &sub), MATEX_ERR_INVALID_ARG, "n = 0",
                         "empty list");
  errors += expect_error(matex_comm_create_from_ranks(parent, nullptr, 1, &sub), MATEX_ERR_INVALID_ARG, "ranks",
                         "NULL list");
  if (size > 1) {
    const int others[1] = {(me + 1) % size};
    errors += expect_error(matex_comm_create_from_ranks(parent, others, 1, &sub), MATEX_ERR_INVALID_ARG,
                           "does not list", "list without the caller");
  }
  EXPECT_EQ(sub, nullptr);
  errors += check_comm_still_works(parent);
  agree_no_errors(errors, "bad rank lists");
}

// The PUs of every rank's main-thread affinity, or'd over the job (every
// layout here is one machine). Collective.
std::vector<int> job_pus() {
  cpu_set_t mine;
  CPU_ZERO(&mine);
  EXPECT_EQ(sched_getaffinity(0, sizeof(mine), &mine), 0);
  constexpr int kWords = CPU_SETSIZE / 64;
  std::vector<uint64_t> bits(kWords, 0), all(kWords, 0);
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &mine)) bits[cpu / 64] |= uint64_t{1} << (cpu % 64);
  }
  MPI_Allreduce(bits.data(), all.data(), kWords, MPI_UINT64_T, MPI_BOR, MPI_COMM_WORLD);
  std::vector<int> pus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (all[cpu / 64] >> (cpu % 64) & 1) pus.push_back(cpu);
  }
  return pus;
}

// Confines this rank to `pus` for its lifetime where every rank could be
// confined (collective), then restores its affinity.
class JobConfinedTo {
 public:
  explicit JobConfinedTo(const std::vector<int>& pus) {
    CPU_ZERO(&saved_);
    cpu_set_t narrow;
    CPU_ZERO(&narrow);
    for (int pu : pus) CPU_SET(pu, &narrow);
    saved_ok_ = sched_getaffinity(0, sizeof(saved_), &saved_) == 0;
    const int mine = saved_ok_ && sched_setaffinity(0, sizeof(narrow), &narrow) == 0 ? 1 : 0;
    MPI_Allreduce(&mine, &everywhere_, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!everywhere_) restore();
  }
  ~JobConfinedTo() { restore(); }
  bool everywhere() const { return everywhere_ != 0; }

 private:
  void restore() {
    if (saved_ok_) sched_setaffinity(0, sizeof(saved_), &saved_);
    saved_ok_ = false;
  }
  cpu_set_t saved_;
  bool saved_ok_ = false;
  int everywhere_ = 0;
};

// Whether a communicator's measured allreduce table says that cores are shared.
long long expect_shared_cores(matex_comm_t comm, bool shared, const std::string& what) {
  const char* text = nullptr;
  EXPECT_EQ(matex_describe_selection(comm, &text), MATEX_SUCCESS) << matex_last_error();
  const std::string selection = text != nullptr ? text : "";
  const bool measured = selection.find("measured at init") != std::string::npos;
  const bool says_shared = selection.find("more ranks than cores") != std::string::npos;
  EXPECT_TRUE(measured) << what << ": no table measured at init:\n" << selection;
  EXPECT_EQ(says_shared, shared) << what << " (the job has " << world_size() << " ranks):\n" << selection;
  return !measured || says_shared != shared;
}

// Ranks 0 and 1 (one node in every layout the suite runs with 3 or 4 ranks)
// share the PUs of the job's other ranks. A sub-communicator of them must say
// so as its parent does, here with the whole job confined to two PUs (so that
// the pair alone would fit them). A communicator that matex_init_mpi makes
// over an MPI communicator of them counts the others where the pair may run on
// every PU online, and where a launcher says how many ranks it started here.
TEST(SubCommunicators, CountTheJobsOtherRanksOnTheirCores) {
  const std::vector<int> nodes = parent_nodes();
  if (world_size() < 3 || nodes[0] != nodes[1]) GTEST_SKIP() << "needs ranks 0 and 1 on one node, and a third rank";
  const std::vector<int> pus = job_pus();
  if (pus.size() < 2) GTEST_SKIP() << "needs two PUs";
  const bool member = world_rank() < 2;
  const int pair[2] = {0, 1};
  ScopedEnv calibrate("MATEX_CALIBRATE", "init");
  long long errors = 0;
  bool confined = false;
  {
    JobConfinedTo two_pus({pus[0], pus[1]});
    confined = two_pus.everywhere();
    if (confined) {
      matex_comm_t parent = nullptr;
      const matex_status_t created = matex_init_mpi(MPI_COMM_WORLD, &parent);
      EXPECT_EQ(created, MATEX_SUCCESS) << matex_last_error();
      if (created == MATEX_SUCCESS) {
        errors += expect_shared_cores(parent, true, "the job confined to two PUs");
        if (member) {
          matex_comm_t sub = nullptr;
          const matex_status_t status = matex_comm_create_from_ranks(parent, pair, 2, &sub);
          EXPECT_EQ(status, MATEX_SUCCESS) << matex_last_error();
          errors += status != MATEX_SUCCESS;
          if (status == MATEX_SUCCESS) {
            errors += expect_shared_cores(sub, true, "sub-communicator {0,1} of the job confined to two PUs");
            EXPECT_EQ(matex_finalize(&sub), MATEX_SUCCESS) << matex_last_error();
          }
        }
        EXPECT_EQ(matex_finalize(&parent), MATEX_SUCCESS) << matex_last_error();
      }
      errors += created != MATEX_SUCCESS;
    }
  }

  // Unconfined: the pair counts the others where it may run on every PU online.
  const bool every_pu = static_cast<long>(pus.size()) >= sysconf(_SC_NPROCESSORS_ONLN);
  const bool launcher_counts = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE") != nullptr ||
                               std::getenv("MPI_LOCALNRANKS") != nullptr;
  MPI_Comm pair_mpi = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, member ? 0 : MPI_UNDEFINED, world_rank(), &pair_mpi);
  const bool pair_checked = every_pu && launcher_counts;
  if (member && pair_checked) {
    ScopedEnv one_node("MATEX_VIRTUAL_NODES", nullptr);
    matex_comm_t comm = nullptr;
    const matex_status_t status = matex_init_mpi(pair_mpi, &comm);
    EXPECT_EQ(status, MATEX_SUCCESS) << matex_last_error();
    errors += status != MATEX_SUCCESS;
    if (status == MATEX_SUCCESS) {
      errors += expect_shared_cores(comm, world_size() > static_cast<int>(pus.size()),
                                    "matex_init_mpi over an MPI communicator of ranks 0 and 1");
      EXPECT_EQ(matex_finalize(&comm), MATEX_SUCCESS) << matex_last_error();
    }
  }
  if (pair_mpi != MPI_COMM_NULL) MPI_Comm_free(&pair_mpi);
  agree_no_errors(errors, "communicators over ranks 0 and 1");
  if (!confined && !pair_checked) {  // the same on every rank
    GTEST_SKIP() << "could not confine the job to PUs " << pus[0] << " and " << pus[1]
                 << ", and the pair may not run on every PU online or no launcher counted the ranks";
  }
}

}  // namespace
}  // namespace matex_test
