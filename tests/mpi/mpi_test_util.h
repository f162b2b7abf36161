// mpi_test_util.h - shared plumbing of the multi-rank tests: the one
// communicator all collective tests use, reusable scratch buffers, cross-rank
// agreement on error counts, and the mismatch report of a result check.
//
// Rule of these tests: every rank calls every collective in the same order.
// Checks use EXPECT_* and count local errors; at the end of a test the counts
// are summed over ranks (agree_no_errors), so all ranks pass or fail together.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "matexcomm/matexcomm.h"

namespace matex_test {

// The communicator over MPI_COMM_WORLD shared by the collective tests, created
// on first use (collective: every rank must reach the first call).
matex_comm_t test_comm();
// Finalizes test_comm() if it was created; called by main before MPI_Finalize.
void release_test_comm();

int world_rank();
int world_size();

// Element storage of at least `elements` T's in slot 0..3, reused across calls.
void* scratch_bytes(int slot, size_t bytes);
template <class T>
T* scratch(int slot, size_t elements) {
  return static_cast<T*>(scratch_bytes(slot, elements * sizeof(T)));
}

// Sums local_errors over MPI_COMM_WORLD and EXPECTs zero on every rank; the
// failure message lists the ranks that saw errors. Collective.
void agree_no_errors(long long local_errors, const std::string& what);

// MATEX_VIRTUAL_NODES as node sizes, or empty when unset.
std::vector<int> virtual_node_sizes();

// Sets (or, with nullptr, unsets) one environment variable for its lifetime.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    const char* old = std::getenv(name);
    had_ = old != nullptr;
    if (had_) old_ = old;
    if (value != nullptr) setenv(name, value, 1);
    else unsetenv(name);
  }
  ~ScopedEnv() {
    if (had_) setenv(name_, old_.c_str(), 1);
    else unsetenv(name_);
  }

 private:
  const char* name_;
  bool had_ = false;
  std::string old_;
};

// The first few wrong elements of a checked buffer, and how many there were.
class Mismatches {
 public:
  void add(size_t index, double got, double expected) {
    if (count_ < kShown) {
      text_ << "\n  [" << index << "] got " << got << ", expected " << expected;
    }
    ++count_;
  }
  size_t count() const { return count_; }
  std::string report() const {
    return std::to_string(count_) + " wrong element(s); first ones:" + text_.str();
  }

 private:
  static constexpr size_t kShown = 5;
  size_t count_ = 0;
  std::ostringstream text_;
};

// Compares got[0..n) against expected(i), decoding through Traits.
template <class Traits, class Expected>
void check_elements(const typename Traits::Storage* got, size_t n, Expected&& expected, Mismatches& out,
                    size_t index_offset = 0) {
  for (size_t i = 0; i < n; ++i) {
    const double want = static_cast<double>(expected(i));
    const double have = Traits::decode(got[i]);
    if (have != want) out.add(i + index_offset, have, want);
  }
}

// Writes a recognizable guard value after the n elements of buf, and checks it.
constexpr size_t kGuardElements = 8;
template <class Traits>
void write_guard(typename Traits::Storage* buf, size_t n) {
  for (size_t g = 0; g < kGuardElements; ++g) buf[n + g] = Traits::encode(77 - static_cast<int64_t>(g));
}
template <class Traits>
void check_guard(const typename Traits::Storage* buf, size_t n, Mismatches& out) {
  check_elements<Traits>(buf + n, kGuardElements, [](size_t g) { return 77 - static_cast<int64_t>(g); }, out, n);
}

}  // namespace matex_test
