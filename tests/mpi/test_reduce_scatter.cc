// test_reduce_scatter.cc - matex_reduce_scatter in every dtype x op, for
// recvcounts 0, 1, 7, 1023 and a few odd/prime ones, out of place and with
// MATEX_IN_PLACE (recvbuf holds the whole input; block 0 of it receives the
// result). Rank r's block must equal the reference reduction of elements
// [r*recvcount, (r+1)*recvcount) of every rank's input; avg on integer
// dtypes must be rejected with MATEX_ERR_INVALID_ARG.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "exact_values.h"
#include "mpi_test_util.h"
#include "reduction_patterns.h"

namespace matex_test {
namespace {

constexpr size_t kRecvCounts[] = {0, 1, 7, 1023, 4099, 65537};

template <class Traits>
long long run_reduce_scatter(matex_comm_t comm, matex_op_t op, size_t recvcount, bool in_place) {
  using S = typename Traits::Storage;
  const int rank = world_rank();
  const size_t total = recvcount * static_cast<size_t>(world_size());
  const auto describe = [&] {
    return std::string("reduce_scatter dtype=") + matex_dtype_name(Traits::kDtype) + " op=" + matex_op_name(op) +
           " recvcount=" + std::to_string(recvcount) + (in_place ? " MATEX_IN_PLACE" : " out-of-place") +
           " rank=" + std::to_string(rank);
  };
  const ReductionPattern pattern(op, Traits::kUnsigned, world_size(), Traits::kBool);
  S* send = scratch<S>(0, total + kGuardElements);
  S* recv = scratch<S>(1, (in_place ? total : recvcount) + kGuardElements);
  S* input = in_place ? recv : send;
  for (size_t i = 0; i < total; ++i) input[i] = Traits::encode(pattern.input(i, rank));
  const size_t guarded = in_place ? total : recvcount;
  if (!in_place) std::memset(recv, 0xA5, recvcount * sizeof(S));
  write_guard<Traits>(recv, guarded);

  const matex_status_t status =
      matex_reduce_scatter(comm, in_place ? MATEX_IN_PLACE : send, recv, recvcount, Traits::kDtype, op);
  EXPECT_EQ(status, MATEX_SUCCESS) << describe() << ": " << matex_last_error();
  if (status != MATEX_SUCCESS) return 1;

  const size_t first = static_cast<size_t>(rank) * recvcount;
  Mismatches result;
  check_elements<Traits>(recv, recvcount, [&](size_t j) { return pattern.expected(first + j); }, result);
  EXPECT_EQ(result.count(), 0u) << describe() << ": " << result.report();
  Mismatches guard;
  check_guard<Traits>(recv, guarded, guard);
  EXPECT_EQ(guard.count(), 0u) << describe() << ": wrote past the receive buffer: " << guard.report();
  Mismatches source;
  if (!in_place) {
    check_elements<Traits>(send, total, [&](size_t i) { return pattern.input(i, rank); }, source);
    EXPECT_EQ(source.count(), 0u) << describe() << ": sendbuf was modified: " << source.report();
  }
  return static_cast<long long>(result.count() + guard.count() + source.count());
}

class ReduceScatterByDtype : public testing::TestWithParam<matex_dtype_t> {};

TEST_P(ReduceScatterByDtype, EveryOpAndCount) {
  const matex_dtype_t dtype = GetParam();
  matex_comm_t comm = test_comm();
  long long errors = 0;
  for (matex_op_t op : kAllOps) {
    if (op == MATEX_AVG && !is_floating(dtype)) {
      int64_t buf[16] = {};
      const matex_status_t status = matex_reduce_scatter(comm, buf, buf + 8, 1, dtype, op);
      EXPECT_EQ(status, MATEX_ERR_INVALID_ARG) << "reduce_scatter avg on " << matex_dtype_name(dtype);
      EXPECT_NE(std::string(matex_last_error()).find("avg"), std::string::npos) << matex_last_error();
      errors += status != MATEX_ERR_INVALID_ARG;
      continue;
    }
    for (size_t recvcount : kRecvCounts) {
      for (bool in_place : {false, true}) {
        with_dtype(dtype, [&](auto t) { errors += run_reduce_scatter<decltype(t)>(comm, op, recvcount, in_place); });
      }
    }
  }
  const char* ran = "?";
  EXPECT_EQ(matex_last_algorithm(comm, MATEX_COLL_REDUCE_SCATTER, &ran), MATEX_SUCCESS);
  EXPECT_STREQ(ran, "flat");
  agree_no_errors(errors, std::string("reduce_scatter ") + matex_dtype_name(dtype));
}

std::string dtype_name(const testing::TestParamInfo<matex_dtype_t>& info) { return matex_dtype_name(info.param); }

INSTANTIATE_TEST_SUITE_P(AllDtypes, ReduceScatterByDtype, testing::ValuesIn(kAllDtypes), dtype_name);

// The newer dtypes with every op and the bitwise ops with every older dtype:
// recvcounts 0, 1, 13 and 1021 (prime block lengths), placement alternating.
// Refused pairs must fail locally with MATEX_ERR_INVALID_ARG.
TEST(ReduceScatterNewTypes, EveryPair) {
  matex_comm_t comm = test_comm();
  long long errors = 0;
  bool in_place = false;
  for (const DtypeOp& pair : new_reduction_pairs()) {
    if (refused_pair(pair.dtype, pair.op)) {
      int64_t buf[16] = {};
      const matex_status_t status = matex_reduce_scatter(comm, buf, buf + 8, 1, pair.dtype, pair.op);
      EXPECT_EQ(status, MATEX_ERR_INVALID_ARG) << matex_op_name(pair.op) << " on " << matex_dtype_name(pair.dtype);
      EXPECT_NE(std::string(matex_last_error()).find(matex_op_name(pair.op)), std::string::npos) << matex_last_error();
      errors += status != MATEX_ERR_INVALID_ARG;
      continue;
    }
    for (size_t recvcount : {size_t(0), size_t(1), size_t(13), size_t(1021)}) {
      in_place = !in_place;
      with_dtype(pair.dtype,
                 [&](auto t) { errors += run_reduce_scatter<decltype(t)>(comm, pair.op, recvcount, in_place); });
    }
  }
  agree_no_errors(errors, "reduce_scatter of the newer dtypes and ops");
}

}  // namespace
}  // namespace matex_test
