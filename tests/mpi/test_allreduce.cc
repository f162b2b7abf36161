// test_allreduce.cc - matex_allreduce against a reference computed in the
// test: every algorithm x dtype x op x count x placement (out of place,
// sendbuf == recvbuf, MATEX_IN_PLACE), every element checked, plus a guard
// after the result that must stay untouched. avg on integer dtypes must be
// rejected with MATEX_ERR_INVALID_ARG. The newer dtypes and the bitwise ops
// run in a smaller sweep of their own (AllreduceNewTypes).
//
// Every count below the largest runs in all three placements. The largest
// (4M elements, past every chunk and pipeline threshold) is where CI time
// goes, so it runs once per (algorithm, dtype): one op and one placement,
// both rotating with the algorithm and the dtype, so that each algorithm
// meets every placement at that size (with two or three dtypes each) and
// every op meets it. MATEX_TEST_FULL=1 runs it for every op in every
// placement instead.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <limits>
#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include "exact_values.h"
#include "matexcomm/matexcomm_mpi.h"
#include "mpi_test_util.h"
#include "reduction_patterns.h"

namespace matex_test {
namespace {

enum Placement { kOutOfPlace = 0, kSameBuffer = 1, kInPlaceMarker = 2 };
const char* placement_label(int p) {
  return p == kOutOfPlace ? "out-of-place" : p == kSameBuffer ? "sendbuf==recvbuf" : "MATEX_IN_PLACE";
}

constexpr size_t kHugeCount = 4194307;
constexpr size_t kCounts[] = {0, 1, 3, 7, 1023, 65537, kHugeCount};
const char* const kAlgorithms[] = {"flat", "rs_ar_ag", "rab", "oneshot", "rs_ar_ag_cma"};
constexpr int kAlgorithmCount = sizeof(kAlgorithms) / sizeof(kAlgorithms[0]);

struct Case {
  const char* algorithm;
  matex_dtype_t dtype;
  matex_op_t op;
  size_t count;
  int placement;
  std::string describe() const {
    return std::string("allreduce algorithm=") + algorithm + " dtype=" + matex_dtype_name(dtype) + " op=" + matex_op_name(op) +
           " count=" + std::to_string(count) + " " + placement_label(placement) + " rank=" +
           std::to_string(world_rank());
  }
};

// Runs one case; returns the number of local errors.
template <class Traits>
long long run_case(matex_comm_t comm, const Case& c) {
  using S = typename Traits::Storage;
  const int rank = world_rank();
  const ReductionPattern pattern(c.op, Traits::kUnsigned, world_size(), Traits::kBool);
  S* send = scratch<S>(0, c.count + kGuardElements);
  S* recv = scratch<S>(1, c.count + kGuardElements);
  S* input = c.placement == kOutOfPlace ? send : recv;
  for (size_t i = 0; i < c.count; ++i) input[i] = Traits::encode(pattern.input(i, rank));
  if (c.placement == kOutOfPlace) std::memset(recv, 0xA5, c.count * sizeof(S));
  write_guard<Traits>(recv, c.count);

  const void* sendbuf = c.placement == kOutOfPlace ? send : c.placement == kSameBuffer ? recv : MATEX_IN_PLACE;
  const matex_status_t status = matex_allreduce(comm, sendbuf, recv, c.count, c.dtype, c.op);
  EXPECT_EQ(status, MATEX_SUCCESS) << c.describe() << ": " << matex_last_error();
  if (status != MATEX_SUCCESS) return 1;

  long long errors = 0;
  const char* ran = "?";
  EXPECT_EQ(matex_last_algorithm(comm, MATEX_COLL_ALLREDUCE, &ran), MATEX_SUCCESS);
  int nodes = 1;
  matex_comm_node_count(comm, &nodes);
  const bool oneshot_across_nodes = nodes > 1 && std::string(c.algorithm) == "oneshot";  // runs rab there
  const std::string wanted = world_size() == 1 ? "flat" : oneshot_across_nodes ? "rab" : c.algorithm;
  if (wanted != ran) {
    ADD_FAILURE() << c.describe() << ": matex_last_algorithm says \"" << ran << "\", expected \"" << wanted << "\"";
    ++errors;
  }

  Mismatches result;
  check_elements<Traits>(recv, c.count, [&](size_t i) { return pattern.expected(i); }, result);
  EXPECT_EQ(result.count(), 0u) << c.describe() << ": result " << result.report();
  Mismatches guard;
  check_guard<Traits>(recv, c.count, guard);
  EXPECT_EQ(guard.count(), 0u) << c.describe() << ": wrote past recvbuf[count]: " << guard.report();
  Mismatches source;
  if (c.placement == kOutOfPlace) {
    check_elements<Traits>(send, c.count, [&](size_t i) { return pattern.input(i, rank); }, source);
    EXPECT_EQ(source.count(), 0u) << c.describe() << ": sendbuf was modified: " << source.report();
  }
  return errors + static_cast<long long>(result.count() + guard.count() + source.count());
}

class AllreduceMatrix : public testing::TestWithParam<std::tuple<int, matex_dtype_t>> {};

TEST_P(AllreduceMatrix, EveryOpCountAndPlacement) {
  const int algorithm_index = std::get<0>(GetParam());
  const matex_dtype_t dtype = std::get<1>(GetParam());
  const char* algorithm = kAlgorithms[algorithm_index];
  matex_comm_t comm = test_comm();
  const char* full = std::getenv("MATEX_TEST_FULL");
  const bool huge_everywhere = full != nullptr && std::string(full) == "1";
  long long errors = 0;
  const matex_status_t set = matex_set_algorithm(comm, MATEX_COLL_ALLREDUCE, algorithm);
  EXPECT_EQ(set, MATEX_SUCCESS) << matex_last_error();
  errors += set != MATEX_SUCCESS;

  const int valid_ops = is_floating(dtype) ? 5 : 4;  // avg is refused on integers
  int valid_op_index = 0;
  for (matex_op_t op : kAllOps) {
    if (op == MATEX_AVG && !is_floating(dtype)) {
      // Rejected locally by every rank, before any communication.
      int8_t buf[8] = {};
      const matex_status_t status = matex_allreduce(comm, buf, buf, 1, dtype, op);
      EXPECT_EQ(status, MATEX_ERR_INVALID_ARG) << "avg on " << matex_dtype_name(dtype);
      EXPECT_NE(std::string(matex_last_error()).find("avg"), std::string::npos) << matex_last_error();
      errors += status != MATEX_ERR_INVALID_ARG;
      continue;
    }
    // This op's turn at the largest count, and in which placement (-1: none).
    const int dtype_index = static_cast<int>(dtype);
    const bool huge_turn = valid_op_index++ == (algorithm_index + dtype_index) % valid_ops;
    const int huge_placement = huge_turn ? (algorithm_index + dtype_index) % 3 : -1;
    for (size_t count : kCounts) {
      for (int placement = kOutOfPlace; placement <= kInPlaceMarker; ++placement) {
        if (count == kHugeCount && placement != huge_placement && !huge_everywhere) continue;
        const Case c{algorithm, dtype, op, count, placement};
        with_dtype(dtype, [&](auto traits) { errors += run_case<decltype(traits)>(comm, c); });
      }
    }
  }
  EXPECT_EQ(matex_set_algorithm(comm, MATEX_COLL_ALLREDUCE, "auto"), MATEX_SUCCESS);
  agree_no_errors(errors, std::string("allreduce ") + algorithm + " " + matex_dtype_name(dtype));
}

std::string matrix_name(const testing::TestParamInfo<std::tuple<int, matex_dtype_t>>& info) {
  return std::string(kAlgorithms[std::get<0>(info.param)]) + "_" + matex_dtype_name(std::get<1>(info.param));
}

INSTANTIATE_TEST_SUITE_P(AllAlgorithms, AllreduceMatrix,
                         testing::Combine(testing::Range(0, kAlgorithmCount), testing::ValuesIn(kAllDtypes)),
                         matrix_name);

// The newer dtypes (bool, int16, uint16, uint32, uint64) with every op, and the
// bitwise ops with every older dtype, per algorithm. Fewer counts than the
// matrix above: every pair runs 1021 (a prime: no rank count divides it) and
// two of 0, 1, 13 and 65537 (above the small-message thresholds), rotating so
// that each dtype meets all four; one placement per call, rotating too.
// Pairs the library refuses (avg on integers and bool, bitwise ops on floating
// dtypes) must be rejected locally with MATEX_ERR_INVALID_ARG naming the op.
constexpr size_t kNewTypeExtraCounts[] = {0, 1, 13, 65537};

class AllreduceNewTypes : public testing::TestWithParam<int> {};

TEST_P(AllreduceNewTypes, EveryPairOnEveryAlgorithm) {
  const int algorithm_index = GetParam();
  const char* algorithm = kAlgorithms[algorithm_index];
  matex_comm_t comm = test_comm();
  long long errors = 0;
  const matex_status_t set = matex_set_algorithm(comm, MATEX_COLL_ALLREDUCE, algorithm);
  EXPECT_EQ(set, MATEX_SUCCESS) << matex_last_error();
  errors += set != MATEX_SUCCESS;
  int rotation = algorithm_index;
  for (const DtypeOp& pair : new_reduction_pairs()) {
    if (refused_pair(pair.dtype, pair.op)) {
      int64_t buf[8] = {};
      const matex_status_t status = matex_allreduce(comm, buf, buf, 1, pair.dtype, pair.op);
      EXPECT_EQ(status, MATEX_ERR_INVALID_ARG) << matex_op_name(pair.op) << " on " << matex_dtype_name(pair.dtype);
      const std::string message = matex_last_error();
      EXPECT_NE(message.find(matex_op_name(pair.op)), std::string::npos) << message;
      EXPECT_NE(message.find(matex_dtype_name(pair.dtype)), std::string::npos) << message;
      errors += status != MATEX_ERR_INVALID_ARG;
      continue;
    }
    const size_t counts[] = {kNewTypeExtraCounts[rotation % 4], size_t(1021), kNewTypeExtraCounts[(rotation + 1) % 4]};
    for (size_t count : counts) {
      const Case c{algorithm, pair.dtype, pair.op, count, rotation++ % 3};
      with_dtype(pair.dtype, [&](auto traits) { errors += run_case<decltype(traits)>(comm, c); });
    }
  }
  EXPECT_EQ(matex_set_algorithm(comm, MATEX_COLL_ALLREDUCE, "auto"), MATEX_SUCCESS);
  agree_no_errors(errors, std::string("allreduce of the newer dtypes and ops, ") + algorithm);
}

INSTANTIATE_TEST_SUITE_P(AllAlgorithms, AllreduceNewTypes, testing::Range(0, kAlgorithmCount),
                         [](const testing::TestParamInfo<int>& info) { return std::string(kAlgorithms[info.param]); });

// "auto" picks some algorithm; whichever it is, the result must be right.
TEST(Allreduce, AutoSelectionIsCorrect) {
  matex_comm_t comm = test_comm();
  long long errors = 0;
  for (size_t count : {size_t(3), size_t(100003)}) {
    const Case c{"auto", MATEX_FLOAT32, MATEX_SUM, count, kOutOfPlace};
    EXPECT_EQ(matex_set_algorithm(comm, MATEX_COLL_ALLREDUCE, "auto"), MATEX_SUCCESS);
    float* send = scratch<float>(0, count + kGuardElements);
    float* recv = scratch<float>(1, count + kGuardElements);
    const ReductionPattern pattern(MATEX_SUM, false, world_size());
    for (size_t i = 0; i < count; ++i) send[i] = static_cast<float>(pattern.input(i, world_rank()));
    const matex_status_t status = matex_allreduce(comm, send, recv, count, MATEX_FLOAT32, MATEX_SUM);
    EXPECT_EQ(status, MATEX_SUCCESS) << c.describe() << ": " << matex_last_error();
    if (status != MATEX_SUCCESS) { ++errors; continue; }
    Mismatches result;
    check_elements<PlainTraits<float, MATEX_FLOAT32, true>>(recv, count, [&](size_t i) { return pattern.expected(i); },
                                                            result);
    EXPECT_EQ(result.count(), 0u) << c.describe() << ": " << result.report();
    errors += static_cast<long long>(result.count());
  }
  agree_no_errors(errors, "allreduce auto");
}

// A small flat allreduce rides in the call check's recursive doubling, where
// two partners combine each other's values. Min and max of a NaN and a
// number, or of -0 and +0, depend on the order of the operands, so every rank
// must apply them in the same order: all ranks end with the same bits.
TEST(Allreduce, CarriedFlatGivesTheSameBitsOnEveryRank) {
  if (world_size() < 2) GTEST_SKIP() << "one rank reduces nothing";
  matex_comm_t comm = test_comm();
  ASSERT_EQ(matex_set_algorithm(comm, MATEX_COLL_ALLREDUCE, "flat"), MATEX_SUCCESS) << matex_last_error();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const int r = world_rank();
  // Per element: a NaN on some ranks only, or zeros of both signs.
  const float mine[] = {r == 0 ? nan : 1.0f, r == world_size() - 1 ? nan : -2.0f, r % 2 ? 0.0f : -0.0f,
                        r % 2 ? -0.0f : 0.0f, r == 1 ? nan : static_cast<float>(r), 3.0f};
  constexpr int kCount = sizeof mine / sizeof mine[0];
  long long errors = 0;
  for (matex_op_t op : {MATEX_MIN, MATEX_MAX, MATEX_SUM}) {
    float out[kCount];
    ASSERT_EQ(matex_allreduce(comm, mine, out, kCount, MATEX_FLOAT32, op), MATEX_SUCCESS) << matex_last_error();
    std::vector<uint32_t> bits(kCount), all(static_cast<size_t>(kCount) * world_size());
    std::memcpy(bits.data(), out, sizeof out);
    MPI_Allgather(bits.data(), kCount, MPI_UINT32_T, all.data(), kCount, MPI_UINT32_T, MPI_COMM_WORLD);
    for (int other = 1; other < world_size(); ++other) {
      for (int i = 0; i < kCount; ++i) {
        const uint32_t want = all[i];
        const uint32_t got = all[static_cast<size_t>(other) * kCount + i];
        EXPECT_EQ(got, want) << matex_op_name(op) << ": element " << i << " on rank " << other
                             << " has other bits than on rank 0";
        errors += got != want;
      }
    }
    // The finite element is exact: 3 everywhere.
    errors += op == MATEX_SUM ? out[5] != 3.0f * world_size() : out[5] != 3.0f;
  }
  EXPECT_EQ(matex_set_algorithm(comm, MATEX_COLL_ALLREDUCE, "auto"), MATEX_SUCCESS);
  agree_no_errors(errors, "carried flat allreduce: the same bits everywhere");
}

// Out of place, large allreduces run rs_ar_ag; in place, rs_ar_ag_cma. Nodes
// whose ranks differ in placement therefore run different algorithms in the
// same call, and must still combine the same elements across the rails.
TEST(Allreduce, PlacementMayDifferBetweenNodes) {
  ScopedEnv small_cma_max("MATEX_CMA_MAX_BYTES", "256K");  // the large-message rule from 256 KiB
  ScopedEnv fixed_sizes("MATEX_CALIBRATE", "off");         // a measured table might pick flat there
  matex_comm_t comm = nullptr;
  ASSERT_EQ(matex_init_mpi(MPI_COMM_WORLD, &comm), MATEX_SUCCESS) << matex_last_error();
  int node = 0;
  matex_comm_node_index(comm, &node);
  const bool in_place = node % 2 == 0;
  long long errors = 0;
  for (matex_op_t op : {MATEX_SUM, MATEX_MAX}) {
    for (size_t count : {size_t(65537), size_t(262147)}) {  // float32: 256 KiB + 4 B, 1 MiB + 12 B
      float* send = scratch<float>(0, count);
      float* recv = scratch<float>(1, count);
      const ReductionPattern pattern(op, false, world_size());
      for (size_t i = 0; i < count; ++i) recv[i] = send[i] = static_cast<float>(pattern.input(i, world_rank()));
      const matex_status_t status =
          matex_allreduce(comm, in_place ? MATEX_IN_PLACE : send, recv, count, MATEX_FLOAT32, op);
      const char* algorithm = "";
      matex_last_algorithm(comm, MATEX_COLL_ALLREDUCE, &algorithm);
      const std::string what = std::string(in_place ? "in place" : "out of place") + " on node " +
                               std::to_string(node) + ", " + matex_op_name(op) + ", count " +
                               std::to_string(count) + ", algorithm " + algorithm;
      EXPECT_EQ(status, MATEX_SUCCESS) << what << ": " << matex_last_error();
      if (status != MATEX_SUCCESS) { ++errors; continue; }
      Mismatches result;
      check_elements<PlainTraits<float, MATEX_FLOAT32, true>>(
          recv, count, [&](size_t i) { return pattern.expected(i); }, result);
      EXPECT_EQ(result.count(), 0u) << what << ": " << result.report();
      errors += static_cast<long long>(result.count());
    }
  }
  EXPECT_EQ(matex_finalize(&comm), MATEX_SUCCESS) << matex_last_error();
  agree_no_errors(errors, "allreduce with placement differing between nodes");
}

}  // namespace
}  // namespace matex_test
