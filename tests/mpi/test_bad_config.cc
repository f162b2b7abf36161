// test_bad_config.cc - matex_init_mpi with a bad MATEX_VIRTUAL_NODES must
// fail with MATEX_ERR_CONFIG on every rank (no hang, no handle), with a
// message naming MATEX_VIRTUAL_NODES; a spec that differs between ranks too.
// The caller's environment is restored after each case, and a communicator
// created afterwards must work.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "matexcomm/matexcomm_mpi.h"
#include "mpi_test_util.h"

namespace matex_test {
namespace {

// Sets MATEX_VIRTUAL_NODES for its lifetime, then restores the previous value.
class ScopedVirtualNodes {
 public:
  explicit ScopedVirtualNodes(const std::string& value) {
    const char* old = std::getenv("MATEX_VIRTUAL_NODES");
    had_value_ = old != nullptr;
    if (had_value_) old_value_ = old;
    setenv("MATEX_VIRTUAL_NODES", value.c_str(), 1);
  }
  ~ScopedVirtualNodes() {
    if (had_value_) setenv("MATEX_VIRTUAL_NODES", old_value_.c_str(), 1);
    else unsetenv("MATEX_VIRTUAL_NODES");
  }

 private:
  bool had_value_ = false;
  std::string old_value_;
};

// Tries to create a communicator under `spec`; expects MATEX_ERR_CONFIG. Returns local errors.
long long expect_config_error(const std::string& spec) {
  matex_comm_t comm = nullptr;
  matex_status_t status;
  std::string message;
  {
    ScopedVirtualNodes scoped(spec);
    status = matex_init_mpi(MPI_COMM_WORLD, &comm);
    message = matex_last_error();
  }
  long long errors = 0;
  EXPECT_EQ(status, MATEX_ERR_CONFIG) << "MATEX_VIRTUAL_NODES=\"" << spec << "\" on rank " << world_rank() << ": "
                                      << matex_status_string(status) << ": " << message;
  errors += status != MATEX_ERR_CONFIG;
  EXPECT_NE(message.find("MATEX_VIRTUAL_NODES"), std::string::npos) << "message: " << message;
  errors += message.find("MATEX_VIRTUAL_NODES") == std::string::npos;
  EXPECT_EQ(comm, nullptr) << "a failed matex_init_mpi must not hand out a handle";
  if (comm != nullptr) {
    ++errors;
    if (status == MATEX_SUCCESS) matex_finalize(&comm);  // every rank took this branch
  }
  return errors;
}

TEST(BadConfig, MalformedVirtualNodesFailEverywhere) {
  const int size = world_size();
  long long errors = 0;
  const std::vector<std::string> specs = {"3,3",  "2,x", "0,4",   ",",    "2,,2",
                                          "-1,5", "1.5", "99",    "2,2,", std::string(1, ',') + std::to_string(size)};
  for (const std::string& spec : specs) errors += expect_config_error(spec);
  agree_no_errors(errors, "malformed MATEX_VIRTUAL_NODES");
}

TEST(BadConfig, VirtualNodesDifferingBetweenRanks) {
  const int size = world_size();
  // Both specs are valid on their own (one node of <size>, or <size> nodes of
  // one rank), but rank 0 has the first and the others the second.
  std::string ones = "1";
  for (int r = 1; r < size; ++r) ones += ",1";
  const std::string spec = world_rank() == 0 ? std::to_string(size) : ones;
  agree_no_errors(expect_config_error(spec), "MATEX_VIRTUAL_NODES differing between ranks");
}

TEST(BadConfig, EnvironmentRestoredAndCommWorks) {
  // The shared test communicator was created from the original environment; a new one must work too.
  matex_comm_t comm = nullptr;
  const matex_status_t status = matex_init_mpi(MPI_COMM_WORLD, &comm);
  EXPECT_EQ(status, MATEX_SUCCESS) << matex_last_error();
  long long errors = status != MATEX_SUCCESS;
  if (status == MATEX_SUCCESS) {
    const int size = world_size();
    std::vector<double> data(5, 1.0 + world_rank());
    const matex_status_t reduced = matex_allreduce(comm, MATEX_IN_PLACE, data.data(), data.size(), MATEX_FLOAT64,
                                                   MATEX_SUM);
    EXPECT_EQ(reduced, MATEX_SUCCESS) << matex_last_error();
    errors += reduced != MATEX_SUCCESS;
    for (double v : data) {
      EXPECT_EQ(v, size * (size + 1) / 2.0);
      errors += v != size * (size + 1) / 2.0;
    }
    EXPECT_EQ(matex_finalize(&comm), MATEX_SUCCESS) << matex_last_error();
  }
  agree_no_errors(errors, "communicator after bad configurations");
}

}  // namespace
}  // namespace matex_test
