// test_p2p.cc - point-to-point messages on a communicator: order of several
// messages on one tag, any-source receives that report the sender, tags kept
// apart, a receive nobody answers timing out promptly, truncation reported as
// a mismatch naming the sender and both sizes, argument and handle checks, and
// p2p on one thread while another thread runs collectives on the same
// communicator. Every rank sends to its successor in a ring (itself on 1 rank).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "error_checks.h"
#include "mpi_test_util.h"

namespace matex_test {
namespace {

constexpr double kTimeout = 60;

int next_rank() { return (world_rank() + 1) % world_size(); }
int previous_rank() { return (world_rank() + world_size() - 1) % world_size(); }

long long wait_ok(matex_p2p_t request, const std::string& what) {
  const matex_status_t status = matex_p2p_wait(request, kTimeout);
  EXPECT_EQ(status, MATEX_SUCCESS) << what << ": " << matex_last_error();
  return status != MATEX_SUCCESS;
}

TEST(PointToPoint, MessagesOnOneTagArriveInOrder) {
  matex_comm_t comm = test_comm();
  constexpr int kMessages = 6;
  std::vector<std::vector<int32_t>> out(kMessages), in(kMessages);
  std::vector<matex_p2p_t> sends(kMessages), recvs(kMessages);
  long long errors = 0;
  for (int m = 0; m < kMessages; ++m) {
    in[m].assign(5, -1);
    ASSERT_EQ(matex_irecv(comm, in[m].data(), in[m].size(), MATEX_INT32, previous_rank(), 3, &recvs[m]), MATEX_SUCCESS)
        << matex_last_error();
  }
  for (int m = 0; m < kMessages; ++m) {
    out[m].assign(5, 0);
    for (int i = 0; i < 5; ++i) out[m][i] = 1000 * world_rank() + 10 * m + i;
    ASSERT_EQ(matex_isend(comm, out[m].data(), out[m].size(), MATEX_INT32, next_rank(), 3, &sends[m]), MATEX_SUCCESS)
        << matex_last_error();
  }
  for (int m = 0; m < kMessages; ++m) {
    errors += wait_ok(recvs[m], "receive " + std::to_string(m));
    int source = -1;
    size_t count = 0;
    EXPECT_EQ(matex_p2p_status(recvs[m], &source, &count), MATEX_SUCCESS) << matex_last_error();
    EXPECT_EQ(source, previous_rank());
    EXPECT_EQ(count, 5u);
    for (int i = 0; i < 5; ++i) {
      const int32_t want = 1000 * previous_rank() + 10 * m + i;
      EXPECT_EQ(in[m][i], want) << "message " << m << " element " << i;
      errors += in[m][i] != want;
    }
    EXPECT_EQ(matex_p2p_free(&recvs[m]), MATEX_SUCCESS);
    EXPECT_EQ(recvs[m], nullptr);
  }
  for (int m = 0; m < kMessages; ++m) {
    errors += wait_ok(sends[m], "send " + std::to_string(m));
    EXPECT_EQ(matex_p2p_free(&sends[m]), MATEX_SUCCESS);
  }
  agree_no_errors(errors, "p2p ordering");
}

TEST(PointToPoint, AnySourceReportsTheSender) {
  matex_comm_t comm = test_comm();
  const int size = world_size();
  long long errors = 0;
  // Every rank sends its rank to rank 0, which receives them from any source.
  const int32_t payload[2] = {world_rank(), 7 * world_rank()};
  matex_p2p_t send = nullptr;
  ASSERT_EQ(matex_isend(comm, payload, 2, MATEX_INT32, 0, 11, &send), MATEX_SUCCESS) << matex_last_error();
  if (world_rank() == 0) {
    std::vector<int> seen(size, 0);
    for (int k = 0; k < size; ++k) {
      int32_t got[2] = {-1, -1};
      int source = -1;
      const matex_status_t status = matex_recv(comm, got, 2, MATEX_INT32, MATEX_ANY_SOURCE, 11, kTimeout, &source);
      EXPECT_EQ(status, MATEX_SUCCESS) << matex_last_error();
      errors += status != MATEX_SUCCESS;
      EXPECT_EQ(got[0], source) << "the reported source is not the sender";
      EXPECT_EQ(got[1], 7 * source);
      errors += got[0] != source || got[1] != 7 * source;
      if (source >= 0 && source < size) ++seen[source];
    }
    for (int r = 0; r < size; ++r) {
      EXPECT_EQ(seen[r], 1) << "messages from rank " << r;
      errors += seen[r] != 1;
    }
  }
  errors += wait_ok(send, "send to rank 0");
  matex_p2p_free(&send);
  agree_no_errors(errors, "p2p any source");
}

TEST(PointToPoint, TagsAreKeptApart) {
  matex_comm_t comm = test_comm();
  long long errors = 0;
  const float first[3] = {1.0f + world_rank(), 2.0f, 3.0f};
  const float second[4] = {-1.0f - world_rank(), -2.0f, -3.0f, -4.0f};
  matex_p2p_t a = nullptr, b = nullptr;
  ASSERT_EQ(matex_isend(comm, first, 3, MATEX_FLOAT32, next_rank(), 21, &a), MATEX_SUCCESS);
  ASSERT_EQ(matex_isend(comm, second, 4, MATEX_FLOAT32, next_rank(), 22, &b), MATEX_SUCCESS);
  // Received in the other order: the tag, not the arrival, decides.
  float got_second[4] = {}, got_first[3] = {};
  EXPECT_EQ(matex_recv(comm, got_second, 4, MATEX_FLOAT32, previous_rank(), 22, kTimeout, nullptr), MATEX_SUCCESS)
      << matex_last_error();
  EXPECT_EQ(matex_recv(comm, got_first, 3, MATEX_FLOAT32, previous_rank(), 21, kTimeout, nullptr), MATEX_SUCCESS)
      << matex_last_error();
  errors += got_first[0] != 1.0f + previous_rank() || got_first[2] != 3.0f;
  errors += got_second[0] != -1.0f - previous_rank() || got_second[3] != -4.0f;
  EXPECT_EQ(errors, 0) << "tag 21 got " << got_first[0] << ", tag 22 got " << got_second[0];
  errors += wait_ok(a, "send tag 21") + wait_ok(b, "send tag 22");
  matex_p2p_free(&a);
  matex_p2p_free(&b);
  agree_no_errors(errors, "p2p tags");
}

TEST(PointToPoint, ReceiveNobodyAnswersTimesOutPromptly) {
  matex_comm_t comm = test_comm();
  long long errors = 0;
  int32_t buf[4];
  const auto start = std::chrono::steady_clock::now();
  errors += expect_error(matex_recv(comm, buf, 4, MATEX_INT32, previous_rank(), 999, 0.2, nullptr), MATEX_ERR_TIMEOUT,
                         "tag 999", "recv nobody sends");
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 3.0) << "the 0.2 s timeout took " << seconds << " s";
  errors += seconds >= 3.0;
  // A request that timed out stays pending: wait again, test, then free it (cancelled).
  matex_p2p_t pending = nullptr;
  ASSERT_EQ(matex_irecv(comm, buf, 4, MATEX_INT32, MATEX_ANY_SOURCE, 998, &pending), MATEX_SUCCESS);
  errors += expect_error(matex_p2p_wait(pending, 0.05), MATEX_ERR_TIMEOUT, "tag 998", "wait nobody sends");
  int done = -1;
  EXPECT_EQ(matex_p2p_test(pending, &done), MATEX_SUCCESS);
  EXPECT_EQ(done, 0);
  EXPECT_EQ(matex_p2p_free(&pending), MATEX_SUCCESS);
  // The communicator is still fine for collectives: a timeout of a p2p call is not a collective failure.
  errors += check_comm_still_works(comm);
  agree_no_errors(errors, "p2p timeout");
}

TEST(PointToPoint, TruncationNamesTheSenderAndBothSizes) {
  matex_comm_t comm = test_comm();
  long long errors = 0;
  std::vector<double> out(10, 1.5);
  matex_p2p_t send = nullptr;
  ASSERT_EQ(matex_isend(comm, out.data(), out.size(), MATEX_FLOAT64, next_rank(), 31, &send), MATEX_SUCCESS);
  std::vector<double> in(4, 0.0);
  const matex_status_t status = matex_recv(comm, in.data(), in.size(), MATEX_FLOAT64, previous_rank(), 31, kTimeout,
                                           nullptr);
  const std::string sender = "rank " + std::to_string(previous_rank());
  errors += expect_error(status, MATEX_ERR_MISMATCH, sender.c_str(), "truncated recv");
  const std::string message = matex_last_error();
  EXPECT_NE(message.find("10"), std::string::npos) << message;
  EXPECT_NE(message.find("count = 4"), std::string::npos) << message;
  errors += message.find("10") == std::string::npos || message.find("count = 4") == std::string::npos;
  errors += wait_ok(send, "send of 10");
  matex_p2p_free(&send);
  agree_no_errors(errors, "p2p truncation");
}

TEST(PointToPoint, BadArgumentsAndStaleHandles) {
  matex_comm_t comm = test_comm();
  const int size = world_size();
  long long errors = 0;
  int32_t buf[2] = {0, 0};
  matex_p2p_t request = nullptr;
  errors += expect_error(matex_isend(comm, buf, 2, MATEX_INT32, size, 0, &request), MATEX_ERR_INVALID_ARG,
                         ("dest = " + std::to_string(size)).c_str(), "isend(dest = size)");
  errors += expect_error(matex_isend(comm, buf, 2, MATEX_INT32, MATEX_ANY_SOURCE, 0, &request), MATEX_ERR_INVALID_ARG,
                         "dest = -1", "isend(dest = any)");
  errors += expect_error(matex_irecv(comm, buf, 2, MATEX_INT32, -2, 0, &request), MATEX_ERR_INVALID_ARG, "source = -2",
                         "irecv(source = -2)");
  errors += expect_error(matex_irecv(comm, buf, 2, MATEX_INT32, 0, -1, &request), MATEX_ERR_INVALID_ARG, "tag = -1",
                         "irecv(tag = -1)");
  errors += expect_error(matex_send(comm, nullptr, 2, MATEX_INT32, 0, 0, 1.0), MATEX_ERR_INVALID_ARG, "buf",
                         "send(NULL)");
  errors += expect_error(matex_irecv(comm, buf, 2, static_cast<matex_dtype_t>(77), 0, 0, &request),
                         MATEX_ERR_INVALID_ARG, "dtype", "irecv(dtype = 77)");
  // A freed handle, kept in a copy, is rejected rather than used.
  ASSERT_EQ(matex_isend(comm, buf, 2, MATEX_INT32, world_rank(), 41, &request), MATEX_SUCCESS);
  int32_t back[2];
  EXPECT_EQ(matex_recv(comm, back, 2, MATEX_INT32, world_rank(), 41, kTimeout, nullptr), MATEX_SUCCESS);
  errors += wait_ok(request, "send to self");
  matex_p2p_t stale = request;
  EXPECT_EQ(matex_p2p_free(&request), MATEX_SUCCESS);
  int done = 0;
  errors += expect_error(matex_p2p_test(stale, &done), MATEX_ERR_NOT_INITIALIZED, "request", "test(freed)");
  errors += expect_error(matex_p2p_wait(stale, 1.0), MATEX_ERR_NOT_INITIALIZED, "request", "wait(freed)");
  errors += expect_error(matex_p2p_free(&stale), MATEX_ERR_NOT_INITIALIZED, "request", "free(freed)");
  errors += expect_error(matex_p2p_wait(nullptr, 1.0), MATEX_ERR_NOT_INITIALIZED, "request", "wait(NULL)");
  agree_no_errors(errors, "p2p argument checks");
}

// One thread runs allreduces on the communicator while this one exchanges messages on it.
TEST(PointToPoint, RunsBesideCollectivesOnAnotherThread) {
  matex_comm_t comm = test_comm();
  const int size = world_size();
  constexpr int kCollectives = 60;
  constexpr int kMessages = 60;
  std::atomic<long long> collective_errors{0};
  std::thread collectives([&] {
    std::vector<int32_t> in(257), out(257);
    for (int k = 0; k < kCollectives; ++k) {
      for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<int32_t>(i + k + world_rank());
      if (matex_allreduce(comm, in.data(), out.data(), in.size(), MATEX_INT32, MATEX_SUM) != MATEX_SUCCESS) {
        ++collective_errors;
        continue;
      }
      for (size_t i = 0; i < in.size(); ++i) {
        const int64_t want = static_cast<int64_t>(size) * static_cast<int64_t>(i + k) + size * (size - 1) / 2;
        collective_errors += out[i] != want;
      }
    }
  });
  long long errors = 0;
  for (int m = 0; m < kMessages; ++m) {
    int64_t out[3] = {world_rank(), m, 3 * m};
    int64_t in[3] = {-1, -1, -1};
    matex_p2p_t send = nullptr, recv = nullptr;
    errors += matex_irecv(comm, in, 3, MATEX_INT64, previous_rank(), 51, &recv) != MATEX_SUCCESS;
    errors += matex_isend(comm, out, 3, MATEX_INT64, next_rank(), 51, &send) != MATEX_SUCCESS;
    errors += wait_ok(recv, "threaded receive") + wait_ok(send, "threaded send");
    errors += in[0] != previous_rank() || in[1] != m || in[2] != 3 * m;
    matex_p2p_free(&recv);
    matex_p2p_free(&send);
  }
  collectives.join();
  EXPECT_EQ(errors, 0) << "point-to-point beside collectives";
  EXPECT_EQ(collective_errors.load(), 0) << "allreduces beside point-to-point";
  agree_no_errors(errors + collective_errors.load(), "p2p beside collectives");
}

}  // namespace
}  // namespace matex_test
