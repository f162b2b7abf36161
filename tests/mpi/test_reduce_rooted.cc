// test_reduce_rooted.cc - matex_reduce from every root, for every op, in
// float16/bfloat16/int/float dtypes, counts 0 .. 65537 (primes and
// non-multiples of the rank count), in and out of place; and the premultiplied
// sums. Every result is compared with a reference computed here from the
// rank-dependent inputs; guards after the buffers catch overruns.
#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <vector>

#include "error_checks.h"
#include "exact_values.h"
#include "mpi_test_util.h"
#include "rooted_patterns.h"

namespace matex_test {
namespace {

constexpr size_t kCounts[] = {0, 1, 2, 7, 13, 101, 4099};
constexpr size_t kLargeCount = 262147;  // from one root per (dtype, op)
constexpr matex_dtype_t kDtypes[] = {MATEX_INT8,  MATEX_UINT8,   MATEX_INT32,   MATEX_INT64,
                                     MATEX_FLOAT16, MATEX_BFLOAT16, MATEX_FLOAT32, MATEX_FLOAT64};
constexpr matex_op_t kOps[] = {MATEX_SUM, MATEX_PROD, MATEX_MIN, MATEX_MAX, MATEX_AVG};

int64_t input_of(matex_op_t op, size_t i, int rank, bool is_unsigned, int size) {
  if (op == MATEX_PROD) return product_value(i, rank, is_unsigned);
  if (op == MATEX_AVG) return rooted_value(i, rank, is_unsigned) * size;  // the average is then exact
  return rooted_value(i, rank, is_unsigned);
}

int64_t expected_reduction(matex_op_t op, size_t i, bool is_unsigned, int size) {
  int64_t result = input_of(op, i, 0, is_unsigned, size);
  for (int r = 1; r < size; ++r) {
    const int64_t v = input_of(op, i, r, is_unsigned, size);
    switch (op) {
      case MATEX_SUM: case MATEX_AVG: result += v; break;
      case MATEX_PROD: result *= v; break;
      case MATEX_MIN: result = std::min(result, v); break;
      case MATEX_MAX: result = std::max(result, v); break;
      default: break;
    }
  }
  return op == MATEX_AVG ? result / size : result;
}

template <class Traits>
long long run_reduce(matex_comm_t comm, matex_op_t op, size_t count, int root, bool in_place) {
  using S = typename Traits::Storage;
  const int rank = world_rank();
  const int size = world_size();
  const bool is_root = rank == root;
  S* send = scratch<S>(0, count + kGuardElements);
  S* recv = scratch<S>(1, count + kGuardElements);
  S* input = is_root && in_place ? recv : send;
  for (size_t i = 0; i < count; ++i) input[i] = Traits::encode(input_of(op, i, rank, Traits::kUnsigned, size));
  write_guard<Traits>(recv, count);
  if (!in_place) write_guard<Traits>(send, count);
  // Non-roots pass no receive buffer at all (it is ignored there).
  const void* sendbuf = is_root && in_place ? MATEX_IN_PLACE : send;
  const matex_status_t status = matex_reduce(comm, sendbuf, is_root ? recv : nullptr, count, Traits::kDtype, op, root);
  const std::string what = describe_call("reduce", Traits::kDtype, count, root) + " op=" + matex_op_name(op) +
                           (in_place ? " in place" : "") + " rank=" + std::to_string(rank);
  EXPECT_EQ(status, MATEX_SUCCESS) << what << ": " << matex_last_error();
  if (status != MATEX_SUCCESS) return 1;
  Mismatches wrong;
  if (is_root) {
    check_elements<Traits>(recv, count, [&](size_t i) { return expected_reduction(op, i, Traits::kUnsigned, size); },
                           wrong);
  } else {
    check_elements<Traits>(send, count, [&](size_t i) { return input_of(op, i, rank, Traits::kUnsigned, size); },
                           wrong);  // the send buffer is never written
  }
  check_guard<Traits>(recv, count, wrong);
  EXPECT_EQ(wrong.count(), 0u) << what << ": " << wrong.report();
  return static_cast<long long>(wrong.count());
}

class ReduceMatrix : public testing::TestWithParam<matex_dtype_t> {};

TEST_P(ReduceMatrix, EveryRootOpAndCount) {
  const matex_dtype_t dtype = GetParam();
  matex_comm_t comm = test_comm();
  const int size = world_size();
  long long errors = 0;
  with_dtype(dtype, [&](auto traits) {
    using Traits = decltype(traits);
    for (matex_op_t op : kOps) {
      if (op == MATEX_AVG && !Traits::kFloating) continue;
      for (size_t count : kCounts) {
        for (int root = 0; root < size; ++root) {
          errors += run_reduce<Traits>(comm, op, count, root, (count + root) % 2 == 0);
        }
      }
      const int large_root = (static_cast<int>(dtype) + static_cast<int>(op)) % size;
      errors += run_reduce<Traits>(comm, op, kLargeCount, large_root, op == MATEX_SUM);
    }
  });
  agree_no_errors(errors, std::string("reduce ") + matex_dtype_name(dtype));
}

INSTANTIATE_TEST_SUITE_P(Dtypes, ReduceMatrix, testing::ValuesIn(kDtypes),
                         [](const testing::TestParamInfo<matex_dtype_t>& info) {
                           return std::string(matex_dtype_name(info.param));
                         });

// recv = sum over ranks of factor_r * input_r, factor_r = r + 1 (ranks differ).
template <class Traits>
long long run_premul(matex_comm_t comm, bool scatter, size_t count, bool in_place) {
  using S = typename Traits::Storage;
  const int rank = world_rank();
  const int size = world_size();
  const size_t inputs = scatter ? count * size : count;
  S* send = scratch<S>(0, inputs + kGuardElements);
  S* recv = scratch<S>(1, inputs + kGuardElements);
  S* input = in_place ? recv : send;
  for (size_t i = 0; i < inputs; ++i) input[i] = Traits::encode(rooted_value(i, rank, false));
  const size_t outputs = count;
  write_guard<Traits>(recv, in_place ? inputs : outputs);
  const double factor = rank + 1;
  const void* sendbuf = in_place ? MATEX_IN_PLACE : send;
  const matex_status_t status =
      scatter ? matex_reduce_scatter_premul_sum(comm, sendbuf, recv, count, Traits::kDtype, factor)
              : matex_allreduce_premul_sum(comm, sendbuf, recv, count, Traits::kDtype, factor);
  const std::string what = describe_call(scatter ? "reduce_scatter_premul_sum" : "allreduce_premul_sum",
                                         Traits::kDtype, count, -1) + (in_place ? " in place" : "");
  EXPECT_EQ(status, MATEX_SUCCESS) << what << ": " << matex_last_error();
  if (status != MATEX_SUCCESS) return 1;
  const size_t first = scatter ? count * rank : 0;
  Mismatches wrong;
  check_elements<Traits>(recv, outputs, [&](size_t i) {
    int64_t sum = 0;
    for (int r = 0; r < size; ++r) sum += (r + 1) * rooted_value(first + i, r, false);
    return sum;
  }, wrong);
  if (!in_place) {
    check_elements<Traits>(send, inputs, [&](size_t i) { return rooted_value(i, rank, false); }, wrong);
    check_guard<Traits>(recv, outputs, wrong);
  } else {
    check_guard<Traits>(recv, inputs, wrong);
  }
  EXPECT_EQ(wrong.count(), 0u) << what << ": " << wrong.report();
  return static_cast<long long>(wrong.count());
}

TEST(PremulSum, AllreduceAndReduceScatterWithRankFactors) {
  matex_comm_t comm = test_comm();
  long long errors = 0;
  for (matex_dtype_t dtype : {MATEX_FLOAT16, MATEX_BFLOAT16, MATEX_FLOAT32, MATEX_FLOAT64}) {
    with_dtype(dtype, [&](auto traits) {
      using Traits = decltype(traits);
      for (size_t count : {size_t{0}, size_t{1}, size_t{7}, size_t{1031}, size_t{70001}}) {
        for (bool scatter : {false, true}) {
          for (bool in_place : {false, true}) errors += run_premul<Traits>(comm, scatter, count, in_place);
        }
      }
    });
  }
  agree_no_errors(errors, "premul sums");
}

TEST(PremulSum, RejectsIntegerDtypesOnEveryRank) {
  matex_comm_t comm = test_comm();
  std::vector<int32_t> data(8 * world_size(), 1);
  long long errors = 0;
  errors += expect_error(matex_allreduce_premul_sum(comm, data.data(), data.data(), 8, MATEX_INT32, 2.0),
                         MATEX_ERR_INVALID_ARG, "dtype", "allreduce_premul_sum(int32)");
  errors += expect_error(matex_reduce_scatter_premul_sum(comm, MATEX_IN_PLACE, data.data(), 8, MATEX_INT32, 2.0),
                         MATEX_ERR_INVALID_ARG, "dtype", "reduce_scatter_premul_sum(int32)");
  errors += check_comm_still_works(comm);
  agree_no_errors(errors, "premul sums with integer dtypes");
}

TEST(RootedArguments, BadRootAndDtypeFailOnEveryRank) {
  matex_comm_t comm = test_comm();
  const int size = world_size();
  std::vector<float> a(4 * size, 1.0f), b(4 * size, 0.0f);
  std::vector<size_t> counts(size, 4);
  long long errors = 0;
  const std::string bad_root = "root = " + std::to_string(size);
  errors += expect_error(matex_reduce(comm, a.data(), b.data(), 4, MATEX_FLOAT32, MATEX_SUM, size),
                         MATEX_ERR_INVALID_ARG, bad_root.c_str(), "reduce(root = size)");
  errors += expect_error(matex_gather(comm, a.data(), b.data(), 4, MATEX_FLOAT32, -1), MATEX_ERR_INVALID_ARG,
                         "root = -1", "gather(root = -1)");
  errors += expect_error(matex_scatter(comm, a.data(), b.data(), 4, MATEX_FLOAT32, size), MATEX_ERR_INVALID_ARG,
                         bad_root.c_str(), "scatter(root = size)");
  errors += expect_error(matex_gatherv(comm, a.data(), 4, b.data(), counts.data(), nullptr, MATEX_FLOAT32, size),
                         MATEX_ERR_INVALID_ARG, bad_root.c_str(), "gatherv(root = size)");
  errors += expect_error(matex_scatterv(comm, a.data(), counts.data(), nullptr, b.data(), 4, MATEX_FLOAT32, size),
                         MATEX_ERR_INVALID_ARG, bad_root.c_str(), "scatterv(root = size)");
  errors += expect_error(matex_reduce(comm, a.data(), b.data(), 4, static_cast<matex_dtype_t>(99), MATEX_SUM, 0),
                         MATEX_ERR_INVALID_ARG, "dtype", "reduce(dtype = 99)");
  errors += expect_error(matex_alltoall(comm, a.data(), b.data(), 4, static_cast<matex_dtype_t>(99)),
                         MATEX_ERR_INVALID_ARG, "dtype", "alltoall(dtype = 99)");
  errors += expect_error(matex_reduce(comm, a.data(), b.data(), 4, MATEX_INT32, MATEX_AVG, 0),
                         MATEX_ERR_INVALID_ARG, "avg", "reduce(int32, avg)");
  // Counts beyond an int are refused, naming the argument, before any traffic.
  const size_t huge = static_cast<size_t>(INT_MAX) + 1;
  errors += expect_error(matex_gather(comm, a.data(), b.data(), huge, MATEX_FLOAT32, 0), MATEX_ERR_UNSUPPORTED, "count",
                         "gather(count > INT_MAX)");
  errors += expect_error(matex_alltoall(comm, a.data(), b.data(), huge, MATEX_FLOAT32), MATEX_ERR_UNSUPPORTED,
                         "count", "alltoall(count > INT_MAX)");
  matex_p2p_t request = nullptr;
  errors += expect_error(matex_isend(comm, a.data(), huge, MATEX_FLOAT32, 0, 0, &request), MATEX_ERR_UNSUPPORTED,
                         "count", "isend(count > INT_MAX)");
  errors += check_comm_still_works(comm);
  agree_no_errors(errors, "rooted argument checks");
}

}  // namespace
}  // namespace matex_test
