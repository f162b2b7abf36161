// error_checks.h - the two checks every failure test uses: a call failed with
// the expected status and a message naming the culprit, and a communicator
// still computes a correct allreduce afterwards.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "matexcomm/matexcomm.h"
#include "mpi_test_util.h"

namespace matex_test {

// Counts a wrong status or a message that does not mention `needle`. The
// message is only fresh after a failed call, so it is checked only then.
inline long long expect_error(matex_status_t got, matex_status_t want, const char* needle, const char* call) {
  EXPECT_EQ(got, want) << call << ": returned " << matex_status_string(got);
  if (got == MATEX_SUCCESS) return 1;
  const std::string message = matex_last_error();
  EXPECT_NE(message.find(needle), std::string::npos) << call << ": message \"" << message << "\" does not name \""
                                                     << needle << "\"";
  return (got != want) + (message.find(needle) == std::string::npos);
}

// A correct float32 sum allreduce; returns the number of wrong elements (+1 on error status).
inline long long check_comm_still_works(matex_comm_t comm) {
  const int size = world_size();
  std::vector<float> in(1000), out(1000, -1.0f);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>((i % 17) + world_rank());
  const matex_status_t status = matex_allreduce(comm, in.data(), out.data(), in.size(), MATEX_FLOAT32, MATEX_SUM);
  EXPECT_EQ(status, MATEX_SUCCESS) << "allreduce after errors: " << matex_last_error();
  if (status != MATEX_SUCCESS) return 1;
  long long wrong = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    const float want = static_cast<float>((i % 17) * size + size * (size - 1) / 2);
    wrong += out[i] != want;
  }
  EXPECT_EQ(wrong, 0) << "allreduce after errors gave wrong results";
  return wrong;
}

}  // namespace matex_test
