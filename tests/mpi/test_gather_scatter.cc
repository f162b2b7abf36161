// test_gather_scatter.cc - matex_gather(v), matex_scatter(v) from every root
// and matex_alltoall(v), in float16/bfloat16/int/float dtypes, with counts 0,
// 1 and primes, uneven and zero v-counts with gaps between the blocks, in place
// at the root; and count mismatches of the v-variants, which must fail with
// MATEX_ERR_MISMATCH naming the rank at fault on every rank. References are
// computed here from the rank-dependent inputs.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "error_checks.h"
#include "exact_values.h"
#include "mpi_test_util.h"
#include "rooted_patterns.h"

namespace matex_test {
namespace {

constexpr matex_dtype_t kDtypes[] = {MATEX_INT32, MATEX_FLOAT16, MATEX_BFLOAT16, MATEX_FLOAT32, MATEX_UINT8};
constexpr size_t kCounts[] = {0, 1, 7, 13, 1009, 20011};

// Element i of the block rank `from` sends to rank `to` (alltoall, scatter: from = root).
int64_t block_value(size_t i, int from, int to, bool is_unsigned) {
  return rooted_value(i + 31 * static_cast<size_t>(to), from, is_unsigned);
}

// Uneven counts (zeros included) and displacements that leave gaps, blocks in reverse rank order.
struct VLayout {
  std::vector<size_t> counts, displs;
  size_t extent = 0;
};
VLayout uneven_layout(int size, int salt) {
  VLayout v;
  v.counts.resize(size);
  v.displs.resize(size);
  for (int r = 0; r < size; ++r) v.counts[r] = static_cast<size_t>((r * 5 + salt) % 7);  // 0..6
  size_t offset = 0;
  for (int r = size - 1; r >= 0; --r) {
    v.displs[r] = offset;
    offset += v.counts[r] + 2;  // a gap of two elements
  }
  v.extent = offset;
  return v;
}

template <class Traits>
long long run_gather(matex_comm_t comm, size_t count, int root, bool in_place) {
  using S = typename Traits::Storage;
  const int rank = world_rank();
  const int size = world_size();
  const bool is_root = rank == root;
  const bool u = Traits::kUnsigned;
  S* send = scratch<S>(0, count);
  S* recv = scratch<S>(1, count * size + kGuardElements);
  for (size_t i = 0; i < count; ++i) send[i] = Traits::encode(block_value(i, rank, root, u));
  if (is_root) {
    for (size_t i = 0; i < count * size; ++i) recv[i] = Traits::encode(99);
    write_guard<Traits>(recv, count * size);
    if (in_place) std::copy_n(send, count, recv + count * rank);
  }
  const void* sendbuf = is_root && in_place ? MATEX_IN_PLACE : send;
  const matex_status_t status = matex_gather(comm, sendbuf, is_root ? recv : nullptr, count, Traits::kDtype, root);
  const std::string what = describe_call("gather", Traits::kDtype, count, root) + (in_place ? " in place" : "");
  EXPECT_EQ(status, MATEX_SUCCESS) << what << ": " << matex_last_error();
  if (status != MATEX_SUCCESS) return 1;
  if (!is_root) return 0;
  Mismatches wrong;
  check_elements<Traits>(recv, count * size, [&](size_t k) { return block_value(k % (count ? count : 1), int(k / (count ? count : 1)), root, u); },
                         wrong);
  check_guard<Traits>(recv, count * size, wrong);
  EXPECT_EQ(wrong.count(), 0u) << what << ": " << wrong.report();
  return static_cast<long long>(wrong.count());
}

template <class Traits>
long long run_scatter(matex_comm_t comm, size_t count, int root, bool in_place) {
  using S = typename Traits::Storage;
  const int rank = world_rank();
  const int size = world_size();
  const bool is_root = rank == root;
  const bool u = Traits::kUnsigned;
  S* send = scratch<S>(0, count * size);
  S* recv = scratch<S>(1, count + kGuardElements);
  if (is_root) {
    for (int to = 0; to < size; ++to) {
      for (size_t i = 0; i < count; ++i) send[to * count + i] = Traits::encode(block_value(i, root, to, u));
    }
  }
  for (size_t i = 0; i < count; ++i) recv[i] = Traits::encode(99);
  write_guard<Traits>(recv, count);
  void* recvbuf = is_root && in_place ? const_cast<void*>(MATEX_IN_PLACE) : recv;
  const matex_status_t status = matex_scatter(comm, is_root ? send : nullptr, recvbuf, count, Traits::kDtype, root);
  const std::string what = describe_call("scatter", Traits::kDtype, count, root) + (in_place ? " in place" : "");
  EXPECT_EQ(status, MATEX_SUCCESS) << what << ": " << matex_last_error();
  if (status != MATEX_SUCCESS) return 1;
  Mismatches wrong;
  const S* mine = is_root && in_place ? send + count * rank : recv;
  check_elements<Traits>(mine, count, [&](size_t i) { return block_value(i, root, rank, u); }, wrong);
  check_guard<Traits>(recv, count, wrong);
  EXPECT_EQ(wrong.count(), 0u) << what << ": " << wrong.report();
  return static_cast<long long>(wrong.count());
}

template <class Traits>
long long run_gatherv_scatterv(matex_comm_t comm, int root, int salt, bool in_place) {
  using S = typename Traits::Storage;
  const int rank = world_rank();
  const int size = world_size();
  const bool is_root = rank == root;
  const bool u = Traits::kUnsigned;
  const VLayout v = uneven_layout(size, salt);
  long long errors = 0;
  const std::string tag = " root=" + std::to_string(root) + " salt=" + std::to_string(salt) +
                          (in_place ? " in place" : "") + " dtype=" + matex_dtype_name(Traits::kDtype);
  // gatherv: rank r sends counts[r] elements, landing at displs[r] of the root's buffer.
  S* mine = scratch<S>(0, v.counts[rank] + 1);
  S* whole = scratch<S>(1, v.extent + kGuardElements);
  for (size_t i = 0; i < v.counts[rank]; ++i) mine[i] = Traits::encode(block_value(i, rank, root, u));
  for (size_t i = 0; i < v.extent; ++i) whole[i] = Traits::encode(98);
  write_guard<Traits>(whole, v.extent);
  if (is_root && in_place) std::copy_n(mine, v.counts[rank], whole + v.displs[rank]);
  matex_status_t status =
      matex_gatherv(comm, is_root && in_place ? MATEX_IN_PLACE : mine, v.counts[rank], is_root ? whole : nullptr,
                    is_root ? v.counts.data() : nullptr, is_root ? v.displs.data() : nullptr, Traits::kDtype, root);
  EXPECT_EQ(status, MATEX_SUCCESS) << "gatherv" << tag << ": " << matex_last_error();
  errors += status != MATEX_SUCCESS;
  if (is_root && status == MATEX_SUCCESS) {
    Mismatches wrong;
    std::vector<int64_t> want(v.extent, 98);
    for (int r = 0; r < size; ++r) {
      for (size_t i = 0; i < v.counts[r]; ++i) want[v.displs[r] + i] = block_value(i, r, root, u);
    }
    check_elements<Traits>(whole, v.extent, [&](size_t k) { return want[k]; }, wrong);  // gaps untouched
    check_guard<Traits>(whole, v.extent, wrong);
    EXPECT_EQ(wrong.count(), 0u) << "gatherv" << tag << ": " << wrong.report();
    errors += static_cast<long long>(wrong.count());
  }
  // scatterv: the root's block for rank r (counts[r] elements at displs[r]) goes to rank r.
  if (is_root) {
    for (int r = 0; r < size; ++r) {
      for (size_t i = 0; i < v.counts[r]; ++i) whole[v.displs[r] + i] = Traits::encode(block_value(i, root, r, u));
    }
  }
  S* got = scratch<S>(2, v.counts[rank] + kGuardElements);
  for (size_t i = 0; i < v.counts[rank]; ++i) got[i] = Traits::encode(97);
  write_guard<Traits>(got, v.counts[rank]);
  void* recvbuf = is_root && in_place ? const_cast<void*>(MATEX_IN_PLACE) : got;
  status = matex_scatterv(comm, is_root ? whole : nullptr, is_root ? v.counts.data() : nullptr,
                          is_root ? v.displs.data() : nullptr, recvbuf, v.counts[rank], Traits::kDtype, root);
  EXPECT_EQ(status, MATEX_SUCCESS) << "scatterv" << tag << ": " << matex_last_error();
  errors += status != MATEX_SUCCESS;
  if (status == MATEX_SUCCESS) {
    Mismatches wrong;
    const S* result = is_root && in_place ? whole + v.displs[rank] : got;
    check_elements<Traits>(result, v.counts[rank], [&](size_t i) { return block_value(i, root, rank, u); }, wrong);
    check_guard<Traits>(got, v.counts[rank], wrong);
    EXPECT_EQ(wrong.count(), 0u) << "scatterv" << tag << ": " << wrong.report();
    errors += static_cast<long long>(wrong.count());
  }
  return errors;
}

template <class Traits>
long long run_alltoall(matex_comm_t comm, size_t count) {
  using S = typename Traits::Storage;
  const int rank = world_rank();
  const int size = world_size();
  const bool u = Traits::kUnsigned;
  S* send = scratch<S>(0, count * size);
  S* recv = scratch<S>(1, count * size + kGuardElements);
  for (int to = 0; to < size; ++to) {
    for (size_t i = 0; i < count; ++i) send[to * count + i] = Traits::encode(block_value(i, rank, to, u));
  }
  write_guard<Traits>(recv, count * size);
  const matex_status_t status = matex_alltoall(comm, send, recv, count, Traits::kDtype);
  const std::string what = describe_call("alltoall", Traits::kDtype, count, -1);
  EXPECT_EQ(status, MATEX_SUCCESS) << what << ": " << matex_last_error();
  if (status != MATEX_SUCCESS) return 1;
  Mismatches wrong;
  for (int from = 0; from < size; ++from) {
    check_elements<Traits>(recv + from * count, count, [&](size_t i) { return block_value(i, from, rank, u); }, wrong,
                           from * count);
  }
  check_guard<Traits>(recv, count * size, wrong);
  EXPECT_EQ(wrong.count(), 0u) << what << ": " << wrong.report();
  return static_cast<long long>(wrong.count());
}

// Rank r sends (r + 2j + salt) % 4 elements to rank j (zeros included), packed in send, gapped in recv.
size_t alltoallv_count(int from, int to, int salt) { return static_cast<size_t>((from + 2 * to + salt) % 4); }

template <class Traits>
long long run_alltoallv(matex_comm_t comm, int salt) {
  using S = typename Traits::Storage;
  const int rank = world_rank();
  const int size = world_size();
  const bool u = Traits::kUnsigned;
  std::vector<size_t> scounts(size), sdispls(size), rcounts(size), rdispls(size);
  size_t soffset = 0, roffset = 0;
  for (int j = 0; j < size; ++j) {
    scounts[j] = alltoallv_count(rank, j, salt);
    sdispls[j] = soffset;
    soffset += scounts[j];
    rcounts[j] = alltoallv_count(j, rank, salt);
    rdispls[j] = roffset + 1;  // one element of gap before each block
    roffset += rcounts[j] + 1;
  }
  S* send = scratch<S>(0, soffset + 1);
  S* recv = scratch<S>(1, roffset + kGuardElements);
  for (int j = 0; j < size; ++j) {
    for (size_t i = 0; i < scounts[j]; ++i) send[sdispls[j] + i] = Traits::encode(block_value(i, rank, j, u));
  }
  for (size_t k = 0; k < roffset; ++k) recv[k] = Traits::encode(96);
  write_guard<Traits>(recv, roffset);
  const matex_status_t status = matex_alltoallv(comm, send, scounts.data(), sdispls.data(), recv, rcounts.data(),
                                                rdispls.data(), Traits::kDtype);
  const std::string what = std::string("alltoallv dtype=") + matex_dtype_name(Traits::kDtype) +
                           " salt=" + std::to_string(salt);
  EXPECT_EQ(status, MATEX_SUCCESS) << what << ": " << matex_last_error();
  if (status != MATEX_SUCCESS) return 1;
  std::vector<int64_t> want(roffset, 96);
  for (int j = 0; j < size; ++j) {
    for (size_t i = 0; i < rcounts[j]; ++i) want[rdispls[j] + i] = block_value(i, j, rank, u);
  }
  Mismatches wrong;
  check_elements<Traits>(recv, roffset, [&](size_t k) { return want[k]; }, wrong);
  check_guard<Traits>(recv, roffset, wrong);
  EXPECT_EQ(wrong.count(), 0u) << what << ": " << wrong.report();
  return static_cast<long long>(wrong.count());
}

class GatherScatterMatrix : public testing::TestWithParam<matex_dtype_t> {};

TEST_P(GatherScatterMatrix, EveryRootAndCount) {
  matex_comm_t comm = test_comm();
  const int size = world_size();
  long long errors = 0;
  with_dtype(GetParam(), [&](auto traits) {
    using Traits = decltype(traits);
    for (size_t count : kCounts) {
      for (int root = 0; root < size; ++root) {
        const bool in_place = (count + root) % 2 == 1;
        errors += run_gather<Traits>(comm, count, root, in_place);
        errors += run_scatter<Traits>(comm, count, root, !in_place);
      }
      errors += run_alltoall<Traits>(comm, count);
    }
    for (int root = 0; root < size; ++root) {
      for (int salt = 0; salt < 2; ++salt) errors += run_gatherv_scatterv<Traits>(comm, root, salt, salt == 1);
    }
    for (int salt = 0; salt < 3; ++salt) errors += run_alltoallv<Traits>(comm, salt);
  });
  agree_no_errors(errors, std::string("gather/scatter/alltoall ") + matex_dtype_name(GetParam()));
}

INSTANTIATE_TEST_SUITE_P(Dtypes, GatherScatterMatrix, testing::ValuesIn(kDtypes),
                         [](const testing::TestParamInfo<matex_dtype_t>& info) {
                           return std::string(matex_dtype_name(info.param));
                         });

// The last rank disagrees with the root (or with its peer) about one count.
TEST(VariableCounts, MismatchFailsOnEveryRankNamingTheRank) {
  matex_comm_t comm = test_comm();
  const int rank = world_rank();
  const int size = world_size();
  const int culprit = size - 1;
  const int root = 0;
  std::vector<float> buf(64, 1.0f), out(64, 0.0f);
  std::vector<size_t> counts(size, 3);
  const size_t mine = rank == culprit ? 4 : 3;
  const std::string named = "rank " + std::to_string(culprit);
  long long errors = 0;
  errors += expect_error(matex_gatherv(comm, buf.data(), mine, out.data(), counts.data(), nullptr, MATEX_FLOAT32, root),
                         MATEX_ERR_MISMATCH, named.c_str(), "gatherv with a wrong sendcount");
  errors += expect_error(matex_scatterv(comm, buf.data(), counts.data(), nullptr, out.data(), mine, MATEX_FLOAT32, root),
                         MATEX_ERR_MISMATCH, named.c_str(), "scatterv with a wrong recvcount");
  // alltoallv: the culprit sends one element more to rank 0 than rank 0 expects.
  std::vector<size_t> scounts(size, 1), rcounts(size, 1);
  if (rank == culprit) scounts[0] = 2;
  errors += expect_error(matex_alltoallv(comm, buf.data(), scounts.data(), nullptr, out.data(), rcounts.data(), nullptr,
                                         MATEX_FLOAT32),
                         MATEX_ERR_MISMATCH, named.c_str(), "alltoallv with a wrong sendcount");
  // A NULL recvcounts at the root is the root's mistake, reported on every rank.
  errors += expect_error(matex_gatherv(comm, buf.data(), 3, out.data(), nullptr, nullptr, MATEX_FLOAT32, root),
                         MATEX_ERR_INVALID_ARG, rank == root ? "recvcounts" : "rank 0", "gatherv without recvcounts");
  errors += check_comm_still_works(comm);
  agree_no_errors(errors, "v-variant count mismatches");
}

}  // namespace
}  // namespace matex_test
