// test_broadcast.cc - matex_broadcast with both algorithms ("flat", "hier"),
// from every root, in every dtype, for counts 0 .. 4194307. Non-root ranks
// start from rank-specific garbage; every element and a guard after the
// buffer are checked, and matex_last_algorithm must name the requested one.
//
// The 4194307-element count runs from one root per (algorithm, dtype),
// rotating through the ranks; smaller counts run from every root.
#include <gtest/gtest.h>

#include <string>
#include <tuple>

#include "exact_values.h"
#include "mpi_test_util.h"
#include "reduction_patterns.h"

namespace matex_test {
namespace {

constexpr size_t kHugeCount = 4194307;
constexpr size_t kCounts[] = {0, 1, 7, 1023, 65537, kHugeCount};
const char* const kAlgorithms[] = {"flat", "hier"};

template <class Traits>
long long run_broadcast(matex_comm_t comm, const char* algorithm, size_t count, int root) {
  using S = typename Traits::Storage;
  const int rank = world_rank();
  const auto describe = [&] {
    return std::string("broadcast algorithm=") + algorithm + " dtype=" + matex_dtype_name(Traits::kDtype) +
           " count=" + std::to_string(count) + " root=" + std::to_string(root) + " rank=" + std::to_string(rank);
  };
  S* buf = scratch<S>(0, count + kGuardElements);
  // The root holds the data; the others hold a different, rank-specific pattern.
  const int who = rank == root ? root : 100 + rank;
  for (size_t i = 0; i < count; ++i) buf[i] = Traits::encode(plain_value(i, who, Traits::kUnsigned));
  write_guard<Traits>(buf, count);

  const matex_status_t status = matex_broadcast(comm, buf, count, Traits::kDtype, root);
  EXPECT_EQ(status, MATEX_SUCCESS) << describe() << ": " << matex_last_error();
  if (status != MATEX_SUCCESS) return 1;

  long long errors = 0;
  const char* ran = "?";
  EXPECT_EQ(matex_last_algorithm(comm, MATEX_COLL_BROADCAST, &ran), MATEX_SUCCESS);
  if (std::string(ran) != algorithm) {
    ADD_FAILURE() << describe() << ": matex_last_algorithm says \"" << ran << "\"";
    ++errors;
  }
  Mismatches result;
  check_elements<Traits>(buf, count, [&](size_t i) { return plain_value(i, root, Traits::kUnsigned); }, result);
  EXPECT_EQ(result.count(), 0u) << describe() << ": " << result.report();
  Mismatches guard;
  check_guard<Traits>(buf, count, guard);
  EXPECT_EQ(guard.count(), 0u) << describe() << ": wrote past buffer[count]: " << guard.report();
  return errors + static_cast<long long>(result.count() + guard.count());
}

class BroadcastMatrix : public testing::TestWithParam<std::tuple<int, matex_dtype_t>> {};

TEST_P(BroadcastMatrix, EveryRootAndCount) {
  const int algorithm_index = std::get<0>(GetParam());
  const matex_dtype_t dtype = std::get<1>(GetParam());
  const char* algorithm = kAlgorithms[algorithm_index];
  matex_comm_t comm = test_comm();
  const int size = world_size();
  long long errors = 0;
  const matex_status_t set = matex_set_algorithm(comm, MATEX_COLL_BROADCAST, algorithm);
  EXPECT_EQ(set, MATEX_SUCCESS) << matex_last_error();
  errors += set != MATEX_SUCCESS;

  const int huge_root = (algorithm_index + static_cast<int>(dtype)) % size;
  for (size_t count : kCounts) {
    for (int root = 0; root < size; ++root) {
      if (count == kHugeCount && root != huge_root) continue;
      with_dtype(dtype, [&](auto traits) { errors += run_broadcast<decltype(traits)>(comm, algorithm, count, root); });
    }
  }
  EXPECT_EQ(matex_set_algorithm(comm, MATEX_COLL_BROADCAST, "auto"), MATEX_SUCCESS);
  agree_no_errors(errors, std::string("broadcast ") + algorithm + " " + matex_dtype_name(dtype));
}

std::string matrix_name(const testing::TestParamInfo<std::tuple<int, matex_dtype_t>>& info) {
  return std::string(kAlgorithms[std::get<0>(info.param)]) + "_" + matex_dtype_name(std::get<1>(info.param));
}

INSTANTIATE_TEST_SUITE_P(AllAlgorithms, BroadcastMatrix,
                         testing::Combine(testing::Range(0, 2), testing::ValuesIn(kAllDtypes)), matrix_name);

}  // namespace
}  // namespace matex_test
