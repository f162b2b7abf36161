// Unit tests of the C API that need no MPI job: calls before init, bogus
// handles, status strings, helpers. Each failing call must return a status and
// leave a message that names the argument at fault.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "matexcomm/matexcomm.h"

namespace {

void expect_error(matex_status_t status, matex_status_t expected, const char* fragment) {
  EXPECT_EQ(status, expected) << matex_status_string(status);
  EXPECT_NE(std::string(matex_last_error()).find(fragment), std::string::npos) << matex_last_error();
}

TEST(CApiWithoutInit, NullCommIsRejected) {
  float value = 1;
  expect_error(matex_allreduce(nullptr, &value, &value, 1, MATEX_FLOAT32, MATEX_SUM), MATEX_ERR_NOT_INITIALIZED,
               "matex_init");
  expect_error(matex_broadcast(nullptr, &value, 1, MATEX_FLOAT32, 0), MATEX_ERR_NOT_INITIALIZED, "comm");
  expect_error(matex_barrier(nullptr), MATEX_ERR_NOT_INITIALIZED, "comm");
  int rank = -1;
  expect_error(matex_comm_rank(nullptr, &rank), MATEX_ERR_NOT_INITIALIZED, "comm");
  matex_comm_t none = nullptr;
  expect_error(matex_finalize(&none), MATEX_ERR_NOT_INITIALIZED, "comm");
  expect_error(matex_finalize(nullptr), MATEX_ERR_INVALID_ARG, "comm");
  expect_error(matex_init(nullptr), MATEX_ERR_INVALID_ARG, "comm");
  matex_thread_budget_t budget;
  expect_error(matex_thread_budget(nullptr, &budget, nullptr, 0, nullptr, 0), MATEX_ERR_NOT_INITIALIZED, "comm");
  expect_error(matex_thread_budget(nullptr, nullptr, nullptr, 0, nullptr, 0), MATEX_ERR_INVALID_ARG, "budget");
}

TEST(CApiWithoutInit, ForgedHandleIsRejectedNotDereferenced) {
  int storage[64] = {0};
  auto forged = reinterpret_cast<matex_comm_t>(storage);
  expect_error(matex_barrier(forged), MATEX_ERR_NOT_INITIALIZED, "not a live communicator");
}

TEST(CApiWithoutInit, SettingsComeFromTheTable) {
  const char* value = nullptr;
  unsetenv("MATEX_SEED");
  ASSERT_EQ(matex_config_get("MATEX_SEED", &value), MATEX_SUCCESS) << matex_last_error();
  EXPECT_STREQ(value, "0");  // the table's default
  setenv("MATEX_SEED", "42", 1);
  ASSERT_EQ(matex_config_get("MATEX_SEED", &value), MATEX_SUCCESS) << matex_last_error();
  EXPECT_STREQ(value, "42");
  setenv("MATEX_SEED", "forty-two", 1);
  expect_error(matex_config_get("MATEX_SEED", &value), MATEX_ERR_CONFIG, "MATEX_SEED");
  unsetenv("MATEX_SEED");
  expect_error(matex_config_get("MATEX_NO_SUCH_THING", &value), MATEX_ERR_INVALID_ARG, "MATEX_NO_SUCH_THING");
  expect_error(matex_config_get(nullptr, &value), MATEX_ERR_INVALID_ARG, "name");
  expect_error(matex_config_get("MATEX_SEED", nullptr), MATEX_ERR_INVALID_ARG, "value");
}

TEST(CApiWithoutInit, StatusStringsAndHelpers) {
  for (int s = MATEX_SUCCESS; s <= MATEX_ERR_DEVICE; ++s) {
    EXPECT_STRNE(matex_status_string(static_cast<matex_status_t>(s)), "unknown status") << s;
  }
  EXPECT_STREQ(matex_status_string(static_cast<matex_status_t>(1234)), "unknown status");
  EXPECT_EQ(matex_dtype_size(MATEX_BFLOAT16), 2u);
  EXPECT_EQ(matex_dtype_size(static_cast<matex_dtype_t>(99)), 0u);
  EXPECT_STREQ(matex_op_name(MATEX_MIN), "min");
  EXPECT_STRNE(matex_version_string(), "");
}

}  // namespace
