// test_allgather.cc - matex_allgather (equal counts) and matex_allgatherv
// (uneven counts including zeros, packed or with explicit displacements that
// leave gaps), in every dtype and three placements: out of place,
// MATEX_IN_PLACE, and sendbuf pointing at the rank's own block of recvbuf.
// Every element is checked; gaps and the tail of recvbuf must stay untouched.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "exact_values.h"
#include "mpi_test_util.h"
#include "reduction_patterns.h"

namespace matex_test {
namespace {

enum Placement { kOutOfPlace = 0, kInPlaceMarker = 1, kOwnBlock = 2 };
const char* placement_label(int p) {
  return p == kOutOfPlace ? "out-of-place" : p == kInPlaceMarker ? "MATEX_IN_PLACE" : "sendbuf=own block";
}
constexpr unsigned char kUntouched = 0xA5;
constexpr size_t kGap = 3;  // elements between blocks when displs are given

struct Shape {
  std::vector<size_t> counts;
  std::vector<size_t> displs;  // empty: packed in rank order (displs = NULL)
  size_t offset(int r) const {
    if (!displs.empty()) return displs[r];
    size_t total = 0;
    for (int s = 0; s < r; ++s) total += counts[s];
    return total;
  }
  size_t extent() const {
    size_t end = 0;
    for (size_t r = 0; r < counts.size(); ++r) end = std::max(end, offset(static_cast<int>(r)) + counts[r]);
    return end + kGap;  // a tail that must stay untouched
  }
};

// Blocks in reverse rank order, kGap untouched elements before each.
std::vector<size_t> reversed_displs(const std::vector<size_t>& counts) {
  std::vector<size_t> displs(counts.size());
  size_t next = kGap;
  for (size_t r = counts.size(); r-- > 0;) {
    displs[r] = next;
    next += counts[r] + kGap;
  }
  return displs;
}

template <class Traits>
long long run_gather(matex_comm_t comm, const Shape& shape, int placement, bool use_allgather, const std::string& what) {
  using S = typename Traits::Storage;
  const int rank = world_rank();
  const int size = world_size();
  const auto describe = [&] {
    return what + " dtype=" + matex_dtype_name(Traits::kDtype) + " " + placement_label(placement) + " rank=" +
           std::to_string(rank);
  };
  const size_t mine = shape.counts[rank];
  const size_t extent = shape.extent();
  S* recv = scratch<S>(1, extent);
  std::memset(recv, kUntouched, extent * sizeof(S));
  S* own_block = recv + shape.offset(rank);
  S* send = placement == kOutOfPlace ? scratch<S>(0, mine + 1) : own_block;
  for (size_t j = 0; j < mine; ++j) send[j] = Traits::encode(plain_value(j, rank, Traits::kUnsigned));
  const void* sendbuf = placement == kInPlaceMarker ? MATEX_IN_PLACE : send;

  const matex_status_t status =
      use_allgather ? matex_allgather(comm, sendbuf, recv, mine, Traits::kDtype)
                    : matex_allgatherv(comm, sendbuf, mine, recv, shape.counts.data(),
                                       shape.displs.empty() ? nullptr : shape.displs.data(), Traits::kDtype);
  EXPECT_EQ(status, MATEX_SUCCESS) << describe() << ": " << matex_last_error();
  if (status != MATEX_SUCCESS) return 1;

  Mismatches blocks;
  std::vector<bool> covered(extent, false);
  for (int r = 0; r < size; ++r) {
    const size_t offset = shape.offset(r);
    check_elements<Traits>(recv + offset, shape.counts[r],
                           [&](size_t j) { return plain_value(j, r, Traits::kUnsigned); }, blocks, offset);
    for (size_t j = 0; j < shape.counts[r]; ++j) covered[offset + j] = true;
  }
  EXPECT_EQ(blocks.count(), 0u) << describe() << ": " << blocks.report();
  size_t touched = 0;
  size_t first_touched = 0;
  for (size_t e = 0; e < extent; ++e) {
    if (covered[e]) continue;
    const unsigned char* bytes = reinterpret_cast<const unsigned char*>(recv + e);
    for (size_t b = 0; b < sizeof(S); ++b) {
      if (bytes[b] != kUntouched) {
        if (touched++ == 0) first_touched = e;
        break;
      }
    }
  }
  EXPECT_EQ(touched, 0u) << describe() << ": " << touched << " element(s) outside every block were written, first at "
                         << first_touched;
  return static_cast<long long>(blocks.count() + touched);
}

class GatherByDtype : public testing::TestWithParam<matex_dtype_t> {};

TEST_P(GatherByDtype, AllgatherEqualCounts) {
  const matex_dtype_t dtype = GetParam();
  matex_comm_t comm = test_comm();
  long long errors = 0;
  for (size_t count : {size_t(0), size_t(1), size_t(7), size_t(1023), size_t(65537), size_t(262147)}) {
    for (int placement = kOutOfPlace; placement <= kOwnBlock; ++placement) {
      Shape shape{std::vector<size_t>(world_size(), count), {}};
      const std::string what = "allgather count=" + std::to_string(count);
      with_dtype(dtype, [&](auto t) { errors += run_gather<decltype(t)>(comm, shape, placement, true, what); });
    }
  }
  const char* ran = "?";
  EXPECT_EQ(matex_last_algorithm(comm, MATEX_COLL_ALLGATHER, &ran), MATEX_SUCCESS);
  EXPECT_STREQ(ran, "flat");
  agree_no_errors(errors, std::string("allgather ") + matex_dtype_name(dtype));
}

TEST_P(GatherByDtype, AllgathervUnevenCounts) {
  const matex_dtype_t dtype = GetParam();
  matex_comm_t comm = test_comm();
  const int size = world_size();
  long long errors = 0;
  std::vector<std::vector<size_t>> count_sets;
  std::vector<size_t> counts(size);
  for (int r = 0; r < size; ++r) counts[r] = r % 2 == 0 ? 0 : 3 + 5 * r;  // zeros on even ranks
  count_sets.push_back(counts);
  for (int r = 0; r < size; ++r) counts[r] = 1 + 1000 * r + r * r;  // strongly uneven
  count_sets.push_back(counts);
  for (int r = 0; r < size; ++r) counts[r] = r == size - 1 ? 65537 : 0;  // only the last rank
  count_sets.push_back(counts);
  for (int r = 0; r < size; ++r) counts[r] = r == 0 ? 70001 : (r % 2 ? 0 : 7);  // big first block
  count_sets.push_back(counts);
  count_sets.push_back(std::vector<size_t>(size, 0));  // nothing at all

  for (size_t set = 0; set < count_sets.size(); ++set) {
    for (bool with_displs : {false, true}) {
      Shape shape{count_sets[set], with_displs ? reversed_displs(count_sets[set]) : std::vector<size_t>{}};
      for (int placement = kOutOfPlace; placement <= kOwnBlock; ++placement) {
        const std::string what = "allgatherv counts#" + std::to_string(set) + (with_displs ? " displs" : " packed");
        with_dtype(dtype, [&](auto t) { errors += run_gather<decltype(t)>(comm, shape, placement, false, what); });
      }
    }
  }
  agree_no_errors(errors, std::string("allgatherv ") + matex_dtype_name(dtype));
}

std::string dtype_name(const testing::TestParamInfo<matex_dtype_t>& info) { return matex_dtype_name(info.param); }

INSTANTIATE_TEST_SUITE_P(AllDtypes, GatherByDtype, testing::ValuesIn(kAllDtypes), dtype_name);

}  // namespace
}  // namespace matex_test
