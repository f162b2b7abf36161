// test_engine.cc - the asynchronous engine under mpirun.
//   - 3 threads per rank submit 2,000 named tensors of mixed sizes, dtypes and
//     kinds, in a different random order on every rank; every element is
//     checked against sums computed here;
//   - pre- and post-scale factors;
//   - tensors of every size fused into one collective straight on their own
//     buffers (rounds cut across tensor boundaries), in place or not, scaled;
//   - matex_request_wait_all, its NULL entries and its failure report;
//   - a tensor submitted differently by the ranks (count, dtype, op, root,
//     kind) fails on every rank with a message naming it, and the engine goes
//     on working; so does one that a rank refuses (matex_engine_submit_refusal),
//     with that rank's status and reason;
//   - bad submissions are refused without queuing anything;
//   - the engine's collectives, agreed on by its coordinator, skip the call
//     check that a direct call makes (its messages counted at MPI_Isend);
//   - destroying the engine fails what is still pending with "shut down";
//   - one rank's destroy stops the engine on every rank: what the others wait for fails, naming it;
//   - a rank that submits late is named in rank 0's warning, and a tensor it
//     never submits fails on the others after MATEX_STALL_SHUTDOWN_SECONDS;
//   - an idle engine slows its cycle to MATEX_IDLE_CYCLE_MS, and tensors
//     submitted after the pause still match.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "error_checks.h"
#include "exact_values.h"
#include "matexcomm/matexcomm.h"
#include "matexcomm/matexcomm_mpi.h"
#include "mpi_test_util.h"
#include "reduction_patterns.h"

// The call check's messages, counted where the library sends them: MPI_Isend
// with one of the check's tags (kCallCheckTag, and the range of kCarriedTagBase
// for messages that carry data, in comm/call_agreement.h). Defined in this
// executable, this MPI_Isend comes before libmpi's for the library too.
constexpr int kCallCheckTag = 0x6d63;
constexpr int kCarriedTagBase = 0x4000;
constexpr int kCarriedTagCount = 0x2000;
std::atomic<long> g_signature_exchanges{0};
extern "C" int MPI_Isend(const void* buffer, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
                         MPI_Request* request) {
  if (tag == kCallCheckTag || (tag >= kCarriedTagBase && tag < kCarriedTagBase + kCarriedTagCount)) {
    ++g_signature_exchanges;
  }
  return PMPI_Isend(buffer, count, type, dest, tag, comm, request);
}

namespace matex_test {
namespace {

// Inputs are small integers, so every sum below is exact in every dtype used.
int64_t input_value(size_t tensor, size_t element, int rank) {
  return static_cast<int64_t>((tensor * 3 + element * 7 + static_cast<size_t>(rank) * 5) % 9) - 4;
}

struct Tensor {
  std::string name;
  matex_collective_t coll = MATEX_COLL_ALLREDUCE;
  matex_dtype_t dtype = MATEX_FLOAT32;
  matex_op_t op = MATEX_SUM;
  int root = 0;
  size_t count = 0;
  bool in_place = false;
  std::vector<double> send, recv;  // float64 storage; converted per dtype below
  std::vector<unsigned char> send_bytes, recv_bytes;
};

void encode(matex_dtype_t dtype, const std::vector<double>& values, std::vector<unsigned char>* bytes) {
  bytes->assign(values.size() * matex_dtype_size(dtype), 0);
  for (size_t i = 0; i < values.size(); ++i) {
    switch (dtype) {
      case MATEX_FLOAT32: reinterpret_cast<float*>(bytes->data())[i] = static_cast<float>(values[i]); break;
      case MATEX_FLOAT64: reinterpret_cast<double*>(bytes->data())[i] = values[i]; break;
      case MATEX_INT32: reinterpret_cast<int32_t*>(bytes->data())[i] = static_cast<int32_t>(values[i]); break;
      case MATEX_INT8: reinterpret_cast<int8_t*>(bytes->data())[i] = static_cast<int8_t>(values[i]); break;
      default: FAIL() << "unexpected dtype";
    }
  }
}

double decode(matex_dtype_t dtype, const std::vector<unsigned char>& bytes, size_t i) {
  switch (dtype) {
    case MATEX_FLOAT32: return reinterpret_cast<const float*>(bytes.data())[i];
    case MATEX_FLOAT64: return reinterpret_cast<const double*>(bytes.data())[i];
    case MATEX_INT32: return reinterpret_cast<const int32_t*>(bytes.data())[i];
    case MATEX_INT8: return reinterpret_cast<const int8_t*>(bytes.data())[i];
    default: return -1e300;
  }
}

// Tensor i is the same on every rank except for its inputs.
Tensor make_tensor(size_t i) {
  static const matex_dtype_t kDtypes[] = {MATEX_FLOAT32, MATEX_INT32, MATEX_FLOAT64, MATEX_INT8};
  static const size_t kCounts[] = {1, 7, 100, 1023, 0, 4099, 31, 2};
  Tensor t;
  t.name = "grad/" + std::to_string(i);
  t.dtype = kDtypes[i % 4];
  t.count = i % 97 == 0 ? 65537 : kCounts[i % 8];
  t.in_place = i % 3 == 0;
  if (i % 11 == 0) {
    t.coll = MATEX_COLL_BROADCAST;
    t.root = static_cast<int>(i % static_cast<size_t>(world_size()));
  } else if (i % 5 == 0) {
    t.op = MATEX_MAX;
  }
  t.send.resize(t.count);
  for (size_t j = 0; j < t.count; ++j) t.send[j] = static_cast<double>(input_value(i, j, world_rank()));
  encode(t.dtype, t.send, &t.send_bytes);
  t.recv_bytes.assign(t.send_bytes.size(), 0xEE);
  if (t.in_place || t.coll == MATEX_COLL_BROADCAST) t.recv_bytes = t.send_bytes;
  return t;
}

double expected(const Tensor& t, size_t i, size_t j) {
  if (t.coll == MATEX_COLL_BROADCAST) return static_cast<double>(input_value(i, j, t.root));
  double result = t.op == MATEX_MAX ? -1e300 : 0.0;
  for (int r = 0; r < world_size(); ++r) {
    const double v = static_cast<double>(input_value(i, j, r));
    result = t.op == MATEX_MAX ? std::max(result, v) : result + v;
  }
  return result;
}

matex_tensor_op_t describe(Tensor& t) {
  matex_tensor_op_t op{};
  op.name = t.name.c_str();
  op.coll = t.coll;
  op.sendbuf = t.in_place ? MATEX_IN_PLACE : t.send_bytes.data();
  op.recvbuf = t.recv_bytes.data();
  op.count = t.count;
  op.dtype = t.dtype;
  op.op = t.op;
  op.root = t.root;
  return op;
}

// A float32 sum allreduce of `count` elements (the case most tests need).
matex_tensor_op_t float_sum(const char* name, const void* send, void* recv, size_t count) {
  matex_tensor_op_t op{};
  op.name = name;
  op.coll = MATEX_COLL_ALLREDUCE;
  op.sendbuf = send;
  op.recvbuf = recv;
  op.count = count;
  op.dtype = MATEX_FLOAT32;
  op.op = MATEX_SUM;
  return op;
}

// Float32 sums of the given counts, named "<prefix>/<t>", with the inputs
// input_value(t, j, rank): exact sums, which count_wrong() checks. The ops
// point into this object, so it stays where it was built.
struct FloatSums {
  FloatSums(const std::string& prefix, std::vector<size_t> sizes) : counts(std::move(sizes)) {
    const size_t n = counts.size();
    in.resize(n);
    out.resize(n);
    names.resize(n);
    ops.resize(n);
    for (size_t t = 0; t < n; ++t) {
      in[t].resize(counts[t]);
      for (size_t j = 0; j < counts[t]; ++j) in[t][j] = static_cast<float>(input_value(t, j, world_rank()));
      out[t].assign(counts[t], -1.0f);
      names[t] = prefix + "/" + std::to_string(t);
      ops[t] = float_sum(names[t].c_str(), in[t].data(), out[t].data(), counts[t]);
    }
  }
  FloatSums(const FloatSums&) = delete;
  FloatSums& operator=(const FloatSums&) = delete;

  void make_in_place(size_t t) {
    out[t] = in[t];
    ops[t].sendbuf = MATEX_IN_PLACE;
  }

  // Wrong elements of every output, each tensor's reported.
  long long count_wrong() const {
    long long wrong = 0;
    for (size_t t = 0; t < counts.size(); ++t) {
      Mismatches bad;
      for (size_t j = 0; j < counts[t]; ++j) {
        double want = 0;
        for (int r = 0; r < world_size(); ++r) want += static_cast<double>(input_value(t, j, r));
        if (out[t][j] != static_cast<float>(want)) bad.add(j, out[t][j], want);
      }
      EXPECT_EQ(bad.count(), 0u) << names[t] << ": " << bad.report();
      wrong += static_cast<long long>(bad.count());
    }
    return wrong;
  }

  std::vector<size_t> counts;
  std::vector<std::vector<float>> in, out;
  std::vector<std::string> names;
  std::vector<matex_tensor_op_t> ops;
};

class EngineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(matex_engine_create(test_comm(), &engine_), MATEX_SUCCESS) << matex_last_error();
  }
  void TearDown() override {
    if (engine_ != nullptr) {
      EXPECT_EQ(matex_engine_destroy(&engine_), MATEX_SUCCESS) << matex_last_error();
    }
  }
  matex_engine_t engine_ = nullptr;
};

TEST_F(EngineTest, ThreeThreadsTwoThousandTensorsInRandomOrder) {
  constexpr size_t kTensors = 2000;
  constexpr int kThreads = 3;
  std::vector<Tensor> tensors;
  tensors.reserve(kTensors);
  for (size_t i = 0; i < kTensors; ++i) tensors.push_back(make_tensor(i));
  std::vector<size_t> order(kTensors);
  for (size_t i = 0; i < kTensors; ++i) order[i] = i;
  std::mt19937 shuffle_rng(static_cast<unsigned>(1234 + 77 * world_rank()));  // a different order per rank
  std::shuffle(order.begin(), order.end(), shuffle_rng);

  std::vector<matex_request_t> requests(kTensors, nullptr);
  std::atomic<long long> failures{0};
  std::vector<std::thread> threads;
  for (int k = 0; k < kThreads; ++k) {
    threads.emplace_back([&, k] {
      for (size_t n = static_cast<size_t>(k); n < kTensors; n += kThreads) {
        const size_t i = order[n];
        const matex_tensor_op_t op = describe(tensors[i]);
        if (matex_engine_submit(engine_, &op, 1, &requests[i]) != MATEX_SUCCESS) ++failures;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  ASSERT_EQ(failures.load(), 0) << "submissions failed";
  long long errors = 0;
  for (size_t i = 0; i < kTensors; ++i) {
    const matex_status_t status = matex_request_wait(requests[i]);
    EXPECT_EQ(status, MATEX_SUCCESS) << tensors[i].name << ": " << matex_last_error();
    errors += status != MATEX_SUCCESS;
    matex_request_free(&requests[i]);
    const Tensor& t = tensors[i];
    Mismatches wrong;
    for (size_t j = 0; j < t.count; ++j) {
      const double got = decode(t.dtype, t.recv_bytes, j);
      if (got != expected(t, i, j)) wrong.add(j, got, expected(t, i, j));
    }
    EXPECT_EQ(wrong.count(), 0u) << t.name << " (" << matex_dtype_name(t.dtype) << ", count " << t.count
                                 << "): " << wrong.report();
    errors += static_cast<long long>(wrong.count());
  }
  agree_no_errors(errors, "2,000 tensors from 3 threads");
}

// Training steps: the same names every step. From the second step on they are
// cached, and cycles are decided by the bit vector alone; results stay exact.
TEST_F(EngineTest, RepeatedStepsRunFromTheCache) {
  constexpr int kSteps = 20;
  constexpr size_t kNames = 50;
  std::vector<std::vector<float>> in(kNames), out(kNames);
  long long errors = 0;
  for (int step = 0; step < kSteps; ++step) {
    std::vector<matex_tensor_op_t> ops(kNames);
    std::vector<std::string> names(kNames);
    for (size_t t = 0; t < kNames; ++t) {
      const size_t count = 1 + (t * 37) % 300;
      in[t].resize(count);
      out[t].assign(count, -1.0f);
      for (size_t j = 0; j < count; ++j) in[t][j] = static_cast<float>(input_value(t + step, j, world_rank()));
      names[t] = "layer" + std::to_string(t) + "/grad";
      ops[t] = matex_tensor_op_t{};
      ops[t].name = names[t].c_str();
      ops[t].coll = MATEX_COLL_ALLREDUCE;
      ops[t].sendbuf = in[t].data();
      ops[t].recvbuf = out[t].data();
      ops[t].count = count;
      ops[t].dtype = MATEX_FLOAT32;
      ops[t].op = MATEX_SUM;
    }
    std::reverse(ops.begin(), ops.end());  // gradients arrive last layer first
    std::vector<matex_request_t> requests(kNames, nullptr);
    ASSERT_EQ(matex_engine_submit(engine_, ops.data(), ops.size(), requests.data()), MATEX_SUCCESS)
        << matex_last_error();
    for (matex_request_t& r : requests) {
      errors += matex_request_wait(r) != MATEX_SUCCESS;
      matex_request_free(&r);
    }
    for (size_t t = 0; t < kNames; ++t) {
      for (size_t j = 0; j < out[t].size(); ++j) {
        double want = 0;
        for (int r = 0; r < world_size(); ++r) want += static_cast<double>(input_value(t + step, j, r));
        errors += out[t][j] != static_cast<float>(want);
      }
    }
  }
  matex_engine_stats_t stats{};
  ASSERT_EQ(matex_engine_stats(engine_, &stats), MATEX_SUCCESS);
  EXPECT_GT(stats.cached_cycles, 0u) << "no cycle was decided from the cache";
  EXPECT_GE(stats.tensors, kSteps * kNames);
  EXPECT_GT(stats.fused_responses, 0u) << "nothing was fused";
  errors += stats.cached_cycles == 0;
  agree_no_errors(errors, "repeated steps");
}

// Allgather with a variable first dimension: rank r contributes r rows (rank 0
// none) of 3 int32 values, twice (the second time with other row counts).
TEST_F(EngineTest, AllgatherWithVariableRows) {
  long long errors = 0;
  for (int round = 0; round < 2; ++round) {
    const size_t kRow = 3;
    const size_t my_rows = static_cast<size_t>((world_rank() + round) % (world_size() + 1));
    std::vector<int32_t> mine(my_rows * kRow);
    for (size_t i = 0; i < mine.size(); ++i) mine[i] = static_cast<int32_t>(1000 * world_rank() + i + round);
    matex_tensor_op_t op{};
    op.name = "gather/rows";
    op.coll = MATEX_COLL_ALLGATHER;
    op.sendbuf = mine.empty() ? nullptr : mine.data();
    op.count = my_rows;
    op.row_elements = kRow;
    op.dtype = MATEX_INT32;
    matex_request_t request = nullptr;
    ASSERT_EQ(matex_engine_submit(engine_, &op, 1, &request), MATEX_SUCCESS) << matex_last_error();
    ASSERT_EQ(matex_request_wait(request), MATEX_SUCCESS) << matex_last_error();
    const void* data = nullptr;
    size_t rows = 0;
    ASSERT_EQ(matex_request_output(request, &data, &rows), MATEX_SUCCESS) << matex_last_error();
    std::vector<int32_t> want;
    for (int r = 0; r < world_size(); ++r) {
      const size_t their_rows = static_cast<size_t>((r + round) % (world_size() + 1));
      for (size_t i = 0; i < their_rows * kRow; ++i) want.push_back(static_cast<int32_t>(1000 * r + i + round));
    }
    EXPECT_EQ(rows * kRow, want.size());
    const int32_t* got = static_cast<const int32_t*>(data);
    for (size_t i = 0; i < std::min(want.size(), rows * kRow); ++i) errors += got[i] != want[i];
    errors += rows * kRow != want.size();
    matex_request_free(&request);
  }
  // Rows of different widths cannot be stacked: every rank is told.
  if (world_size() > 1) {
    std::vector<int32_t> row(4, 7);
    matex_tensor_op_t op{};
    op.name = "gather/widths";
    op.coll = MATEX_COLL_ALLGATHER;
    op.sendbuf = row.data();
    op.count = 1;
    op.row_elements = world_rank() == 1 ? 4 : 3;
    op.dtype = MATEX_INT32;
    matex_request_t request = nullptr;
    ASSERT_EQ(matex_engine_submit(engine_, &op, 1, &request), MATEX_SUCCESS) << matex_last_error();
    errors += expect_error(matex_request_wait(request), MATEX_ERR_MISMATCH, "row_elements=4", "allgather widths");
    matex_request_free(&request);
  }
  agree_no_errors(errors, "allgather with variable rows");
}

// A completion callback finds its request in the submission's slot (written
// before anything is queued) and may read an allgather's output there, as the
// TensorFlow kernels do; a refused submission leaves its slots NULL.
struct CallbackSeen {
  matex_request_t* slot = nullptr;
  std::atomic<int> calls{0};
  size_t rows = 0;
  std::vector<int64_t> values;
  matex_status_t output_status = MATEX_ERR_INTERNAL;
};

void read_output_in_callback(matex_status_t status, const char*, void* user_data) {
  auto* seen = static_cast<CallbackSeen*>(user_data);
  const void* data = nullptr;
  if (status == MATEX_SUCCESS && *seen->slot != nullptr) {
    seen->output_status = matex_request_output(*seen->slot, &data, &seen->rows);
    if (seen->output_status == MATEX_SUCCESS) {
      const int64_t* v = static_cast<const int64_t*>(data);
      seen->values.assign(v, v + seen->rows);
    }
  }
  seen->calls.fetch_add(1);
}

TEST_F(EngineTest, CallbacksSeeTheirRequestAndItsOutput) {
  long long errors = 0;
  const int64_t mine[2] = {10 * world_rank(), 10 * world_rank() + 1};
  matex_request_t request = nullptr;
  CallbackSeen seen;
  seen.slot = &request;
  matex_tensor_op_t op{};
  op.name = "callback/allgather";
  op.coll = MATEX_COLL_ALLGATHER;
  op.sendbuf = mine;
  op.count = 2;
  op.dtype = MATEX_INT64;
  op.callback = read_output_in_callback;
  op.user_data = &seen;
  ASSERT_EQ(matex_engine_submit(engine_, &op, 1, &request), MATEX_SUCCESS) << matex_last_error();
  EXPECT_EQ(matex_request_wait(request), MATEX_SUCCESS) << matex_last_error();
  EXPECT_EQ(seen.calls.load(), 1);
  EXPECT_EQ(seen.output_status, MATEX_SUCCESS) << "matex_request_output inside the callback";
  std::vector<int64_t> want;
  for (int r = 0; r < world_size(); ++r) want.insert(want.end(), {10 * r, 10 * r + 1});
  EXPECT_EQ(seen.values, want);
  errors += seen.calls.load() != 1 || seen.output_status != MATEX_SUCCESS || seen.values != want;
  matex_request_free(&request);
  // Refused (NULL sendbuf): the slot is NULL again and no callback ran.
  matex_tensor_op_t bad = op;
  bad.sendbuf = nullptr;
  request = reinterpret_cast<matex_request_t>(&seen);  // any non-NULL value
  errors += expect_error(matex_engine_submit(engine_, &bad, 1, &request), MATEX_ERR_INVALID_ARG, "sendbuf",
                         "refused submission");
  EXPECT_EQ(request, nullptr);
  errors += request != nullptr;
  bad = op;
  bad.coll = MATEX_COLL_REDUCE_SCATTER;  // refused while converting, before anything else
  request = reinterpret_cast<matex_request_t>(&seen);
  errors += expect_error(matex_engine_submit(engine_, &bad, 1, &request), MATEX_ERR_INVALID_ARG, "coll",
                         "refused collective");
  EXPECT_EQ(request, nullptr);
  errors += request != nullptr;
  EXPECT_EQ(seen.calls.load(), 1);
  agree_no_errors(errors, "callbacks and their requests");
}

TEST_F(EngineTest, PrescaleAndPostscale) {
  const size_t count = 1000;
  std::vector<float> in(count), out(count, -1.0f);
  for (size_t i = 0; i < count; ++i) in[i] = static_cast<float>(2 * ((i % 5) + world_rank()));
  matex_tensor_op_t op = float_sum("scaled", in.data(), out.data(), count);
  op.prescale = 0.5;   // halves every (even) input exactly
  op.postscale = 4.0;  // then the sum is multiplied by 4
  matex_request_t request = nullptr;
  ASSERT_EQ(matex_engine_submit(engine_, &op, 1, &request), MATEX_SUCCESS) << matex_last_error();
  EXPECT_EQ(matex_request_wait(request), MATEX_SUCCESS) << matex_last_error();
  matex_request_free(&request);
  long long wrong = 0;
  const int p = world_size();
  for (size_t i = 0; i < count; ++i) {
    const float want = 4.0f * static_cast<float>((i % 5) * p + p * (p - 1) / 2);
    wrong += out[i] != want;
  }
  EXPECT_EQ(wrong, 0);
  // A tensor too big to fuse, with a prescale on odd ranks only: those ranks
  // reduce from their output buffer, the others straight from the input, and
  // all must still pick the same algorithm.
  const size_t big = 300007;
  std::vector<float> bin(big), bout(big, -1.0f);
  for (size_t i = 0; i < big; ++i) bin[i] = static_cast<float>(2 * (i % 7));
  op.name = "scaled/big";
  op.sendbuf = bin.data();
  op.recvbuf = bout.data();
  op.count = big;
  op.prescale = world_rank() % 2 == 1 ? 0.5 : 1.0;
  op.postscale = 1.0;
  ASSERT_EQ(matex_engine_submit(engine_, &op, 1, &request), MATEX_SUCCESS) << matex_last_error();
  EXPECT_EQ(matex_request_wait(request), MATEX_SUCCESS) << matex_last_error();
  matex_request_free(&request);
  const int odd = p / 2, even = p - p / 2;
  for (size_t i = 0; i < big; ++i) {
    wrong += bout[i] != static_cast<float>(2 * (i % 7) * even + (i % 7) * odd);
  }
  EXPECT_EQ(wrong, 0);
  agree_no_errors(wrong, "prescale and postscale");
}

// One grouped submission of float32 sums whose sizes cut the pipeline's
// rounds (1 MiB) at every kind of place: empty, one element, primes, several
// rounds; every third in place, every fourth scaled. They may fuse into one
// collective that runs on their own buffers; every element must be exact.
TEST_F(EngineTest, FusedTensorsOfEverySizeAreExact) {
  const size_t kCounts[] = {0, 1, 300007, 5, 262147, 3, 1048583, 7, 65537, 0, 131071, 2};
  constexpr size_t kN = sizeof kCounts / sizeof kCounts[0];
  const int p = world_size();
  long long wrong = 0;
  for (int step = 0; step < 3; ++step) {  // the first full, the next from the cache
    std::vector<std::vector<float>> in(kN), out(kN);
    std::vector<matex_tensor_op_t> ops(kN);
    std::vector<std::string> names(kN);
    for (size_t t = 0; t < kN; ++t) {
      in[t].resize(kCounts[t]);
      for (size_t j = 0; j < kCounts[t]; ++j) in[t][j] = static_cast<float>(2 * input_value(t + step, j, world_rank()));
      out[t].assign(kCounts[t], -1.0f);
      names[t] = "fused/" + std::to_string(t);
      ops[t] = float_sum(names[t].c_str(), in[t].data(), out[t].data(), kCounts[t]);
      if (t % 3 == 0) {
        out[t] = in[t];
        ops[t].sendbuf = MATEX_IN_PLACE;
      }
      if (t % 4 == 1) {
        ops[t].prescale = 0.5;  // halves the even inputs exactly
        ops[t].postscale = 2.0;
      }
    }
    std::vector<matex_request_t> requests(kN, nullptr);
    ASSERT_EQ(matex_engine_submit(engine_, ops.data(), kN, requests.data()), MATEX_SUCCESS) << matex_last_error();
    EXPECT_EQ(matex_request_wait_all(requests.data(), kN), MATEX_SUCCESS) << matex_last_error();
    for (matex_request_t& r : requests) matex_request_free(&r);
    for (size_t t = 0; t < kN; ++t) {
      Mismatches bad;
      for (size_t j = 0; j < kCounts[t]; ++j) {
        double want = 0;
        for (int r = 0; r < p; ++r) want += static_cast<double>(2 * input_value(t + step, j, r));
        if (out[t][j] != static_cast<float>(want)) bad.add(j, out[t][j], want);
      }
      EXPECT_EQ(bad.count(), 0u) << names[t] << " (count " << kCounts[t] << ", step " << step << "): " << bad.report();
      wrong += static_cast<long long>(bad.count());
    }
  }
  agree_no_errors(wrong, "fused tensors of every size");
}

// The coordinator has every rank run the same collectives in the same order,
// so under MATEX_CHECK_CALLS=auto the engine's calls skip the call check. A
// direct broadcast, checked in every layout, shows that the counter sees it.
TEST_F(EngineTest, CollectivesAgreedByTheCoordinatorSkipTheCallCheck) {
  if (world_size() < 2) GTEST_SKIP() << "one rank has nothing to check";
  const int p = world_size();
  long long wrong = 0;
  std::vector<int32_t> direct(13, world_rank() == 0 ? 5 : -1);
  const long before_direct = g_signature_exchanges.load();
  ASSERT_EQ(matex_broadcast(test_comm(), direct.data(), direct.size(), MATEX_INT32, 0), MATEX_SUCCESS)
      << matex_last_error();
  const long direct_checks = g_signature_exchanges.load() - before_direct;
  EXPECT_GE(direct_checks, 1) << "a direct broadcast sent no call check: the counter is blind";
  wrong += direct_checks < 1;
  for (int32_t v : direct) wrong += v != 5;

  const FloatSums sums("agreed", {1, 7, 1021, 65537});  // fused below the fusion size, the last alone
  std::vector<int32_t> broadcast(11, world_rank() == p - 1 ? 9 : -1);
  std::vector<matex_tensor_op_t> ops = sums.ops;
  matex_tensor_op_t& cast = ops.emplace_back();
  cast.name = "agreed/broadcast";
  cast.coll = MATEX_COLL_BROADCAST;
  cast.sendbuf = MATEX_IN_PLACE;
  cast.recvbuf = broadcast.data();
  cast.count = broadcast.size();
  cast.dtype = MATEX_INT32;
  cast.root = p - 1;
  const long before_engine = g_signature_exchanges.load();
  std::vector<matex_request_t> requests(ops.size(), nullptr);
  ASSERT_EQ(matex_engine_submit(engine_, ops.data(), ops.size(), requests.data()), MATEX_SUCCESS)
      << matex_last_error();
  EXPECT_EQ(matex_request_wait_all(requests.data(), requests.size()), MATEX_SUCCESS) << matex_last_error();
  for (matex_request_t& r : requests) matex_request_free(&r);
  const long engine_checks = g_signature_exchanges.load() - before_engine;
  EXPECT_EQ(engine_checks, 0) << "the engine's agreed collectives were checked again";
  wrong += engine_checks != 0;
  wrong += sums.count_wrong();
  for (int32_t v : broadcast) wrong += v != 9;
  agree_no_errors(wrong, "agreed collectives without the call check");
}

TEST_F(EngineTest, WaitAllWaitsForEveryRequestAndNamesTheFirstFailure) {
  constexpr size_t kN = 200;
  std::vector<std::vector<float>> in(kN), out(kN);
  std::vector<std::string> names(kN);
  std::vector<matex_tensor_op_t> ops(kN);
  for (size_t t = 0; t < kN; ++t) {
    in[t].assign(1 + t % 13, static_cast<float>(t % 5));
    out[t].assign(in[t].size(), -1.0f);
    names[t] = "wait_all/" + std::to_string(t);
    ops[t] = float_sum(names[t].c_str(), in[t].data(), out[t].data(), in[t].size());
  }
  std::vector<matex_request_t> requests(kN + 1, nullptr);  // the last stays NULL: counts as complete
  ASSERT_EQ(matex_engine_submit(engine_, ops.data(), kN, requests.data()), MATEX_SUCCESS) << matex_last_error();
  EXPECT_EQ(matex_request_wait_all(requests.data(), kN + 1), MATEX_SUCCESS) << matex_last_error();
  // Already complete: returns at once, still successful.
  EXPECT_EQ(matex_request_wait_all(requests.data(), kN), MATEX_SUCCESS) << matex_last_error();
  long long errors = 0;
  for (size_t t = 0; t < kN; ++t) {
    matex_request_free(&requests[t]);
    for (float v : out[t]) errors += v != static_cast<float>((t % 5) * static_cast<size_t>(world_size()));
  }
  errors += expect_error(matex_request_wait_all(nullptr, 3), MATEX_ERR_INVALID_ARG, "requests", "NULL array");
  EXPECT_EQ(matex_request_wait_all(nullptr, 0), MATEX_SUCCESS) << "an empty wait is complete";
  if (world_size() >= 2) {  // the second of three disagrees in count: requests[1] is named
    std::vector<float> a(4, 1.0f), b(4, 0.0f), c(4, 0.0f), d(4, 0.0f);
    const matex_tensor_op_t group[3] = {float_sum("wait_all/ok1", a.data(), b.data(), 4),
                                        float_sum("wait_all/differs", a.data(), c.data(), world_rank() == 1 ? 3 : 4),
                                        float_sum("wait_all/ok2", a.data(), d.data(), 4)};
    matex_request_t three[3] = {nullptr, nullptr, nullptr};
    ASSERT_EQ(matex_engine_submit(engine_, group, 3, three), MATEX_SUCCESS) << matex_last_error();
    errors += expect_error(matex_request_wait_all(three, 3), MATEX_ERR_MISMATCH, "requests[1]", "one failed");
    for (matex_request_t& r : three) matex_request_free(&r);
    for (float v : d) errors += v != static_cast<float>(world_size());  // the others still completed
  }
  agree_no_errors(errors, "wait_all");
}

// One tensor per field that must agree; rank 1 (or the last rank) differs.
TEST_F(EngineTest, DisagreementFailsOnEveryRankAndTheEngineGoesOn) {
  if (world_size() < 2) GTEST_SKIP() << "needs two ranks";
  const bool odd_one = world_rank() == 1;
  struct Case {
    const char* name;
    const char* needle;
    void (*bend)(matex_tensor_op_t*);
  };
  const Case cases[] = {
      {"differs/count", "count=", [](matex_tensor_op_t* op) { op->count = 5; }},
      {"differs/dtype", "float64", [](matex_tensor_op_t* op) { op->dtype = MATEX_FLOAT64; }},
      {"differs/op", "max", [](matex_tensor_op_t* op) { op->op = MATEX_MAX; }},
      {"differs/kind", "broadcast", [](matex_tensor_op_t* op) { op->coll = MATEX_COLL_BROADCAST; }},
      {"differs/root", "root=1", [](matex_tensor_op_t* op) { op->root = 1; }},
  };
  long long errors = 0;
  std::vector<double> buffer(8, 1.0), out(8, 0.0);
  for (const Case& c : cases) {
    matex_tensor_op_t op{};
    op.name = c.name;
    op.coll = std::string(c.name) == "differs/root" ? MATEX_COLL_BROADCAST : MATEX_COLL_ALLREDUCE;
    op.sendbuf = buffer.data();
    op.recvbuf = out.data();
    op.count = 4;
    op.dtype = MATEX_FLOAT32;
    op.op = MATEX_SUM;
    if (odd_one) c.bend(&op);
    matex_request_t request = nullptr;
    ASSERT_EQ(matex_engine_submit(engine_, &op, 1, &request), MATEX_SUCCESS) << matex_last_error();
    errors += expect_error(matex_request_wait(request), MATEX_ERR_MISMATCH, c.name, c.name);
    matex_request_free(&request);
  }
  // A cached tensor (run once before, so announced by its bit) that one rank
  // then submits with another count: the same error, and the name works again after.
  std::vector<float> cin(8, 1.0f), cout(8, 0.0f);
  for (int round = 0; round < 3; ++round) {
      matex_tensor_op_t op = float_sum("cached/differs", cin.data(), cout.data(), round == 1 && odd_one ? 7 : 8);
    matex_request_t request = nullptr;
    ASSERT_EQ(matex_engine_submit(engine_, &op, 1, &request), MATEX_SUCCESS) << matex_last_error();
    if (round == 1) {
      errors += expect_error(matex_request_wait(request), MATEX_ERR_MISMATCH, "count=7", "cached tensor, count differs");
    } else {
      EXPECT_EQ(matex_request_wait(request), MATEX_SUCCESS) << matex_last_error();
      for (float v : cout) errors += v != static_cast<float>(world_size());
    }
    matex_request_free(&request);
  }
  // The engine still works, and the message quoted every rank.
  std::vector<float> in(16, 1.0f), sum(16, 0.0f);
  matex_tensor_op_t ok = float_sum("after/mismatches", in.data(), sum.data(), in.size());
  matex_request_t request = nullptr;
  ASSERT_EQ(matex_engine_submit(engine_, &ok, 1, &request), MATEX_SUCCESS) << matex_last_error();
  EXPECT_EQ(matex_request_wait(request), MATEX_SUCCESS) << matex_last_error();
  matex_request_free(&request);
  for (float v : sum) errors += v != static_cast<float>(world_size());
  agree_no_errors(errors, "disagreeing tensors");
}

// A rank whose own checks fail hands over a refusal instead of data: every
// rank's request fails with that rank's status and reason, not a wait; the
// same with a callback and for a cached name; the name works again after.
TEST_F(EngineTest, ARefusalFailsTheTensorOnEveryRank) {
  const int refuser = world_size() - 1;
  const bool refuses = world_rank() == refuser;
  const std::string reason = "int32 cannot be averaged here";
  const std::string quoted = "rank " + std::to_string(refuser) + ": " + reason;
  long long errors = 0;
  std::vector<float> in(6, 1.0f), out(6, 0.0f);
  // Rounds 0 and 2 run normally (round 0 caches the name); round 1 the last rank refuses it.
  for (int round = 0; round < 3; ++round) {
    matex_tensor_op_t op = float_sum("refusal/plain", in.data(), out.data(), in.size());
    matex_request_t request = nullptr;
    if (round == 1 && refuses) {
      ASSERT_EQ(matex_engine_submit_refusal(engine_, &op, MATEX_ERR_INVALID_ARG, reason.c_str(), &request),
                MATEX_SUCCESS) << matex_last_error();
    } else {
      ASSERT_EQ(matex_engine_submit(engine_, &op, 1, &request), MATEX_SUCCESS) << matex_last_error();
    }
    if (round == 1) {
      errors += expect_error(matex_request_wait(request), MATEX_ERR_INVALID_ARG, quoted.c_str(), "a refused tensor");
    } else {
      EXPECT_EQ(matex_request_wait(request), MATEX_SUCCESS) << matex_last_error();
      for (float v : out) errors += v != static_cast<float>(world_size());
    }
    matex_request_free(&request);
  }
  // With callbacks: each rank's callback sees the refusing rank's status and reason.
  struct Seen {
    std::atomic<int> calls{0};
    std::atomic<int> status{MATEX_SUCCESS};
    std::string message;
  } seen;
  matex_tensor_op_t op = float_sum("refusal/callback", in.data(), out.data(), in.size());
  op.callback = [](matex_status_t status, const char* message, void* user_data) {
    auto* s = static_cast<Seen*>(user_data);
    s->message = message;
    s->status = status;
    s->calls++;
  };
  op.user_data = &seen;
  matex_request_t request = nullptr;
  if (refuses) {
    ASSERT_EQ(matex_engine_submit_refusal(engine_, &op, MATEX_ERR_UNSUPPORTED, reason.c_str(), &request),
              MATEX_SUCCESS) << matex_last_error();
  } else {
    ASSERT_EQ(matex_engine_submit(engine_, &op, 1, &request), MATEX_SUCCESS) << matex_last_error();
  }
  errors += expect_error(matex_request_wait(request), MATEX_ERR_UNSUPPORTED, quoted.c_str(), "a refusal with a callback");
  matex_request_free(&request);
  EXPECT_EQ(seen.calls.load(), 1);
  EXPECT_EQ(seen.status.load(), MATEX_ERR_UNSUPPORTED);
  EXPECT_NE(seen.message.find(quoted), std::string::npos) << seen.message;
  errors += seen.calls.load() != 1 || seen.message.find(quoted) == std::string::npos;
  // Refusals that are themselves wrong are refused at once, on the caller's rank only.
  matex_tensor_op_t bad = float_sum("refusal/bad", in.data(), out.data(), in.size());
  request = reinterpret_cast<matex_request_t>(&bad);  // must be reset to NULL
  errors += expect_error(matex_engine_submit_refusal(engine_, &bad, MATEX_SUCCESS, reason.c_str(), &request),
                         MATEX_ERR_INVALID_ARG, "status is MATEX_SUCCESS", "refusal without an error");
  errors += request != nullptr;
  errors += expect_error(matex_engine_submit_refusal(engine_, &bad, MATEX_ERR_INVALID_ARG, "", nullptr),
                         MATEX_ERR_INVALID_ARG, "reason", "refusal without a reason");
  errors += expect_error(matex_engine_submit_refusal(engine_, nullptr, MATEX_ERR_INVALID_ARG, reason.c_str(), nullptr),
                         MATEX_ERR_INVALID_ARG, "op is NULL", "refusal of no op");
  errors += expect_error(matex_engine_submit_refusal(nullptr, &bad, MATEX_ERR_INVALID_ARG, reason.c_str(), nullptr),
                         MATEX_ERR_NOT_INITIALIZED, "engine is NULL", "refusal on no engine");
  agree_no_errors(errors, "refusals");
}

// Shapes given with matex_engine_submit_shaped must agree as counts do: one count in two shapes fails
// on every rank quoting each rank's shape; agreeing shapes, or none, run; a shape that does not match
// its count is refused at once.
TEST_F(EngineTest, ShapesOfOneCountMustAgree) {
  long long errors = 0;
  std::vector<float> in(6, 1.0f), out(6, 0.0f);
  const int64_t wide[] = {2, 3}, tall[] = {3, 2};
  const bool odd_one = world_size() > 1 && world_rank() == 1;
  struct Round {
    const char* name;
    const int64_t* dims;  // NULL: no shape given on this rank
    bool fails;
  };
  const Round rounds[] = {
      {"shaped/differs", odd_one ? tall : wide, world_size() > 1},
      {"shaped/agrees", wide, false},
      {"shaped/partly", odd_one ? nullptr : wide, false},
  };
  for (const Round& round : rounds) {
    matex_tensor_op_t op = float_sum(round.name, in.data(), out.data(), in.size());
    const matex_shape_t shape{round.dims == nullptr ? 0u : 2u, round.dims};
    matex_request_t request = nullptr;
    ASSERT_EQ(matex_engine_submit_shaped(engine_, &op, &shape, 1, &request), MATEX_SUCCESS) << matex_last_error();
    if (round.fails) {
      errors += expect_error(matex_request_wait(request), MATEX_ERR_MISMATCH, "shape=[3, 2]", round.name);
    } else {
      EXPECT_EQ(matex_request_wait(request), MATEX_SUCCESS) << round.name << ": " << matex_last_error();
      for (float v : out) errors += v != static_cast<float>(world_size());
    }
    matex_request_free(&request);
  }
  // Shapes that do not describe the count are refused on the caller's rank, before anything is queued.
  matex_tensor_op_t op = float_sum("shaped/bad", in.data(), out.data(), in.size());
  const int64_t five[] = {5}, negative[] = {-2, -3};
  const matex_shape_t wrong{1, five}, minus{2, negative}, missing{2, nullptr};
  errors += expect_error(matex_engine_submit_shaped(engine_, &op, &wrong, 1, nullptr), MATEX_ERR_INVALID_ARG,
                         "5 elements, not count=6", "a shape of another count");
  errors += expect_error(matex_engine_submit_shaped(engine_, &op, &minus, 1, nullptr), MATEX_ERR_INVALID_ARG,
                         "negative extent", "a negative extent");
  errors += expect_error(matex_engine_submit_shaped(engine_, &op, &missing, 1, nullptr), MATEX_ERR_INVALID_ARG,
                         "shapes[0].dims is NULL", "dims missing");
  agree_no_errors(errors, "shapes");
}

// Every first-joining rank in turn, with the names new and cached: the others' allreduces (int32 and
// float32 sums, a float64 average; counts 5, 17, 0 and 1, fused) see the joined rank's zeros, a
// broadcast fails naming the joined rank, and the join returns one rank, not the first, everywhere.
TEST_F(EngineTest, AJoinedRankTakesPartWithZerosUntilEveryRankHasJoined) {
  const int size = world_size(), rank = world_rank();
  const size_t counts[] = {5, 17, 0, 1};
  const matex_dtype_t dtypes[] = {MATEX_INT32, MATEX_FLOAT32, MATEX_FLOAT64, MATEX_INT32};
  const matex_op_t ops[] = {MATEX_SUM, MATEX_SUM, MATEX_AVG, MATEX_SUM};
  constexpr size_t kTensors = 4;
  long long errors = 0;
  // Input element j of tensor t on rank r; the average's inputs are multiples of the size, so that
  // every result is exact.
  auto value = [&](size_t t, size_t j, int r) {
    const double v = static_cast<double>((t * 5 + j * 3 + static_cast<size_t>(r) * 7) % 11) - 5;
    return ops[t] == MATEX_AVG ? v * size : v;
  };
  auto step = [&](int joined, const std::string& prefix) {  // joined: a rank that contributes zeros, or -1
    std::vector<std::vector<double>> in(kTensors);
    std::vector<std::vector<unsigned char>> in_bytes(kTensors), out_bytes(kTensors);
    std::vector<std::string> names(kTensors);
    std::vector<matex_tensor_op_t> submitted(kTensors);
    for (size_t t = 0; t < kTensors; ++t) {
      for (size_t j = 0; j < counts[t]; ++j) in[t].push_back(value(t, j, rank));
      encode(dtypes[t], in[t], &in_bytes[t]);
      out_bytes[t].assign(in_bytes[t].size(), 0);
      names[t] = prefix + "/" + std::to_string(t);
      submitted[t] = float_sum(names[t].c_str(), in_bytes[t].data(), out_bytes[t].data(), counts[t]);
      submitted[t].dtype = dtypes[t];
      submitted[t].op = ops[t];
    }
    std::vector<matex_request_t> requests(kTensors, nullptr);
    EXPECT_EQ(matex_engine_submit(engine_, submitted.data(), kTensors, requests.data()), MATEX_SUCCESS)
        << matex_last_error();
    EXPECT_EQ(matex_request_wait_all(requests.data(), kTensors), MATEX_SUCCESS) << prefix << ": " << matex_last_error();
    for (matex_request_t& request : requests) matex_request_free(&request);
    for (size_t t = 0; t < kTensors; ++t) {
      for (size_t j = 0; j < counts[t]; ++j) {
        const double got = decode(dtypes[t], out_bytes[t], j);
        double want = 0;
        for (int r = 0; r < size; ++r) want += r == joined ? 0.0 : value(t, j, r);
        if (ops[t] == MATEX_AVG) want /= size;
        if (got != want) {
          ADD_FAILURE() << names[t] << "[" << j << "] is " << got << ", not " << want;
          ++errors;
        }
      }
    }
  };
  auto join = [&]() {
    matex_request_t request = nullptr;
    EXPECT_EQ(matex_engine_submit_join(engine_, &request), MATEX_SUCCESS) << matex_last_error();
    EXPECT_EQ(matex_request_wait(request), MATEX_SUCCESS) << matex_last_error();
    const void* data = nullptr;
    size_t rows = 0;
    int32_t last = -1;
    EXPECT_EQ(matex_request_output(request, &data, &rows), MATEX_SUCCESS) << matex_last_error();
    if (rows == 1 && data != nullptr) std::memcpy(&last, data, sizeof last);
    matex_request_free(&request);
    return last;
  };
  for (int first = 0; first < size; ++first) {
    for (int cached = 0; cached < 2; ++cached) {
      const std::string prefix = "join/" + std::to_string(first) + "/" + std::to_string(cached);
      if (cached) step(-1, prefix);  // every rank once: the names are cached when the join comes
      int32_t last = -1;
      if (rank == first) {
        last = join();
      } else {
        step(first, prefix);
        std::vector<float> buffer(3, 1.0f);
        const std::string bcast_name = prefix + "/bcast";
        matex_tensor_op_t bcast = float_sum(bcast_name.c_str(), nullptr, buffer.data(), buffer.size());
        bcast.coll = MATEX_COLL_BROADCAST;
        bcast.root = (first + 1) % size;  // a rank that has not joined
        matex_request_t request = nullptr;
        ASSERT_EQ(matex_engine_submit(engine_, &bcast, 1, &request), MATEX_SUCCESS) << matex_last_error();
        const std::string joined = "rank(s) " + std::to_string(first) + " have joined";
        errors += expect_error(matex_request_wait(request), MATEX_ERR_INVALID_ARG, joined.c_str(),
                               "a broadcast while a rank has joined");
        matex_request_free(&request);
        last = join();
      }
      std::vector<int32_t> everyone(static_cast<size_t>(size), -1);
      MPI_Allgather(&last, 1, MPI_INT32_T, everyone.data(), 1, MPI_INT32_T, MPI_COMM_WORLD);
      for (int32_t seen : everyone) {
        EXPECT_EQ(seen, everyone[0]) << prefix << ": the ranks disagree on who joined last";
        errors += seen != everyone[0] || seen < 0 || seen >= size || (size > 1 && seen == first);
      }
    }
  }
  // A second join while the first is in flight is refused on the caller's rank; the name is reserved.
  if (size > 1) {
    matex_request_t pending = nullptr, again = nullptr;
    if (rank == 0) {
      ASSERT_EQ(matex_engine_submit_join(engine_, &pending), MATEX_SUCCESS) << matex_last_error();
      errors += expect_error(matex_engine_submit_join(engine_, &again), MATEX_ERR_INVALID_ARG, "joined already",
                             "a second join");
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank != 0) {
      ASSERT_EQ(matex_engine_submit_join(engine_, &pending), MATEX_SUCCESS) << matex_last_error();
    }
    EXPECT_EQ(matex_request_wait(pending), MATEX_SUCCESS) << matex_last_error();
    matex_request_free(&pending);
  }
  std::vector<float> one(1, 1.0f);
  matex_tensor_op_t reserved = float_sum("matex.engine.join", one.data(), one.data(), 1);
  errors += expect_error(matex_engine_submit(engine_, &reserved, 1, nullptr), MATEX_ERR_INVALID_ARG,
                         "reserved for joins", "the join's name");
  agree_no_errors(errors, "join");
}

TEST_F(EngineTest, BadSubmissionsAreRefusedWithoutQueuing) {
  std::vector<float> a(4, 1.0f), b(4, 0.0f);
  matex_tensor_op_t op = float_sum("refused", a.data(), b.data(), 4);
  long long errors = 0;
  matex_tensor_op_t bad = op;
  bad.name = nullptr;
  errors += expect_error(matex_engine_submit(engine_, &bad, 1, nullptr), MATEX_ERR_INVALID_ARG, "name", "NULL name");
  bad = op;
  bad.name = "";
  errors += expect_error(matex_engine_submit(engine_, &bad, 1, nullptr), MATEX_ERR_INVALID_ARG, "empty", "empty name");
  bad = op;
  bad.dtype = MATEX_INT32;
  bad.prescale = 0.5;
  errors += expect_error(matex_engine_submit(engine_, &bad, 1, nullptr), MATEX_ERR_INVALID_ARG, "prescale",
                         "prescale on int32");
  bad = op;
  bad.op = MATEX_BXOR;
  errors += expect_error(matex_engine_submit(engine_, &bad, 1, nullptr), MATEX_ERR_INVALID_ARG, "bxor",
                         "bxor on float32");
  bad = op;
  bad.dtype = MATEX_BOOL;
  bad.op = MATEX_AVG;
  errors += expect_error(matex_engine_submit(engine_, &bad, 1, nullptr), MATEX_ERR_INVALID_ARG, "avg", "avg on bool");
  bad = op;
  bad.coll = MATEX_COLL_BROADCAST;
  bad.root = world_size();
  errors += expect_error(matex_engine_submit(engine_, &bad, 1, nullptr), MATEX_ERR_INVALID_ARG, "root",
                         "root out of range");
  bad = op;
  bad.coll = MATEX_COLL_ALLGATHER;
  bad.sendbuf = MATEX_IN_PLACE;
  errors += expect_error(matex_engine_submit(engine_, &bad, 1, nullptr), MATEX_ERR_INVALID_ARG, "in-place",
                         "allgather with MATEX_IN_PLACE");
  bad = op;
  bad.coll = MATEX_COLL_REDUCE_SCATTER;
  errors += expect_error(matex_engine_submit(engine_, &bad, 1, nullptr), MATEX_ERR_INVALID_ARG, "coll",
                         "reduce_scatter through the engine");
  bad = op;
  bad.recvbuf = nullptr;
  errors += expect_error(matex_engine_submit(engine_, &bad, 1, nullptr), MATEX_ERR_INVALID_ARG, "recvbuf",
                         "NULL recvbuf");
  const matex_tensor_op_t twice[2] = {op, op};
  errors += expect_error(matex_engine_submit(engine_, twice, 2, nullptr), MATEX_ERR_INVALID_ARG, "twice",
                         "same name twice in one submission");
  // Nothing above was queued: the same name now goes through normally.
  matex_request_t request = nullptr;
  ASSERT_EQ(matex_engine_submit(engine_, &op, 1, &request), MATEX_SUCCESS) << matex_last_error();
  EXPECT_EQ(matex_request_wait(request), MATEX_SUCCESS) << matex_last_error();
  matex_request_free(&request);
  for (float v : b) errors += v != static_cast<float>(world_size());
  agree_no_errors(errors, "bad submissions");
}

// The newer dtypes and the bitwise ops through the engine: three tensors of
// each (dtype, op) pair, submitted together so that they fuse, checked
// against the reference patterns of the collective tests.
TEST_F(EngineTest, NewerDtypesAndBitwiseOpsFuseExactly) {
  struct Pair {
    matex_dtype_t dtype;
    matex_op_t op;
  };
  const Pair pairs[] = {{MATEX_BOOL, MATEX_SUM},    {MATEX_BOOL, MATEX_PROD},  {MATEX_BOOL, MATEX_BXOR},
                        {MATEX_INT16, MATEX_SUM},   {MATEX_INT16, MATEX_BXOR}, {MATEX_UINT16, MATEX_MAX},
                        {MATEX_UINT16, MATEX_BAND}, {MATEX_UINT32, MATEX_PROD}, {MATEX_UINT32, MATEX_BOR},
                        {MATEX_UINT64, MATEX_SUM},  {MATEX_UINT64, MATEX_MIN}, {MATEX_INT32, MATEX_BAND},
                        {MATEX_INT8, MATEX_BOR}};
  const size_t counts[] = {1, 13, 1021};
  struct Item {
    std::string name;
    Pair pair;
    size_t count;
    std::vector<unsigned char> send, recv;
  };
  std::vector<Item> items;
  for (const Pair& pair : pairs) {
    for (size_t count : counts) {
      Item item{std::string("newer/") + matex_dtype_name(pair.dtype) + "/" + matex_op_name(pair.op) + "/" +
                    std::to_string(count),
                pair, count, {}, {}};
      item.send.assign(count * matex_dtype_size(pair.dtype), 0);
      item.recv.assign(item.send.size(), 0xEE);
      matex_test::with_dtype(pair.dtype, [&](auto traits) {
        using Traits = decltype(traits);
        const matex_test::ReductionPattern pattern(pair.op, Traits::kUnsigned, world_size(), Traits::kBool);
        auto* send = reinterpret_cast<typename Traits::Storage*>(item.send.data());
        for (size_t j = 0; j < count; ++j) send[j] = Traits::encode(pattern.input(j + count, world_rank()));
      });
      items.push_back(std::move(item));
    }
  }
  std::vector<matex_tensor_op_t> ops;
  for (Item& item : items) {
    matex_tensor_op_t op{};
    op.name = item.name.c_str();
    op.coll = MATEX_COLL_ALLREDUCE;
    op.sendbuf = item.send.data();
    op.recvbuf = item.recv.data();
    op.count = item.count;
    op.dtype = item.pair.dtype;
    op.op = item.pair.op;
    ops.push_back(op);
  }
  std::vector<matex_request_t> requests(ops.size(), nullptr);
  ASSERT_EQ(matex_engine_submit(engine_, ops.data(), ops.size(), requests.data()), MATEX_SUCCESS) << matex_last_error();
  long long errors = 0;
  for (size_t k = 0; k < items.size(); ++k) {
    const matex_status_t status = matex_request_wait(requests[k]);
    EXPECT_EQ(status, MATEX_SUCCESS) << items[k].name << ": " << matex_last_error();
    errors += status != MATEX_SUCCESS;
    matex_request_free(&requests[k]);
    const Item& item = items[k];
    matex_test::with_dtype(item.pair.dtype, [&](auto traits) {
      using Traits = decltype(traits);
      const matex_test::ReductionPattern pattern(item.pair.op, Traits::kUnsigned, world_size(), Traits::kBool);
      Mismatches wrong;
      matex_test::check_elements<Traits>(reinterpret_cast<const typename Traits::Storage*>(item.recv.data()),
                                         item.count, [&](size_t j) { return pattern.expected(j + item.count); },
                                         wrong);
      EXPECT_EQ(wrong.count(), 0u) << item.name << ": " << wrong.report();
      errors += static_cast<long long>(wrong.count());
    });
  }
  agree_no_errors(errors, "newer dtypes and bitwise ops through the engine");
}

TEST_F(EngineTest, DestroyFailsWhatIsStillPending) {
  if (world_size() < 2) GTEST_SKIP() << "needs two ranks";
  std::vector<float> a(4, 1.0f), b(4, 0.0f);
  matex_tensor_op_t op = float_sum("only/on/rank0", a.data(), b.data(), 4);
  matex_request_t request = nullptr;
  if (world_rank() == 0) {
    ASSERT_EQ(matex_engine_submit(engine_, &op, 1, &request), MATEX_SUCCESS) << matex_last_error();
  }
  ASSERT_EQ(matex_engine_destroy(&engine_), MATEX_SUCCESS) << matex_last_error();
  long long errors = 0;
  if (world_rank() == 0) {
    errors += expect_error(matex_request_wait(request), MATEX_ERR_NOT_INITIALIZED, "shut down", "pending at destroy");
    matex_request_free(&request);
    errors += expect_error(matex_engine_submit(engine_, &op, 1, nullptr), MATEX_ERR_NOT_INITIALIZED, "NULL",
                           "submit after destroy");
  }
  agree_no_errors(errors, "destroy with a pending tensor");
}

// The last rank's program ends (it destroys its engine) while the others wait for a tensor it never
// submits: their wait fails, naming it, instead of hanging, and so does what they submit afterwards.
TEST_F(EngineTest, OneRanksShutdownFailsWhatTheOthersWaitFor) {
  if (world_size() < 2) GTEST_SKIP() << "needs two ranks";
  const int leaving = world_size() - 1;
  const std::string named = "rank " + std::to_string(leaving) + " shut it down";
  std::vector<float> a(4, 1.0f), b(4, 0.0f);
  matex_tensor_op_t op = float_sum("never/on/the/last/rank", a.data(), b.data(), 4);
  matex_request_t request = nullptr;
  long long errors = 0;
  if (world_rank() != leaving) {
    ASSERT_EQ(matex_engine_submit(engine_, &op, 1, &request), MATEX_SUCCESS) << matex_last_error();
  }
  MPI_Barrier(MPI_COMM_WORLD);  // the tensor is queued everywhere but on the leaving rank
  if (world_rank() == leaving) {
    ASSERT_EQ(matex_engine_destroy(&engine_), MATEX_SUCCESS) << matex_last_error();
  } else {
    errors += expect_error(matex_request_wait(request), MATEX_ERR_NOT_INITIALIZED, named.c_str(), "waiting for it");
    matex_request_free(&request);
    op.name = "after/the/shutdown";
    errors += expect_error(matex_engine_submit(engine_, &op, 1, nullptr), MATEX_ERR_NOT_INITIALIZED, named.c_str(),
                           "submitting after it");
  }
  agree_no_errors(errors, "one rank's shutdown while the others wait");
}

// Sends this process's stderr to a file until finish(), which returns what was written.
class StderrCapture {
 public:
  StderrCapture() : path_("/tmp/matex-engine-stderr-" + std::to_string(::getpid())) {
    std::fflush(stderr);
    saved_ = ::dup(2);
    const int fd = ::open(path_.c_str(), O_CREAT | O_TRUNC | O_WRONLY, 0600);
    ::dup2(fd, 2);
    ::close(fd);
  }
  ~StderrCapture() { finish(); }
  std::string finish() {
    if (saved_ < 0) return text_;
    std::fflush(stderr);
    ::dup2(saved_, 2);
    ::close(saved_);
    saved_ = -1;
    std::ifstream in(path_);
    std::stringstream all;
    all << in.rdbuf();
    text_ = all.str();
    std::remove(path_.c_str());
    return text_;
  }

 private:
  std::string path_;
  std::string text_;
  int saved_ = -1;
};

// The ranks a stall message lists: the comma-separated numbers after "rank(s) ".
std::vector<int> ranks_named(const std::string& message) {
  std::vector<int> ranks;
  const size_t at = message.find("rank(s) ");
  if (at == std::string::npos) return ranks;
  std::istringstream list(message.substr(at + 8));
  int rank = 0;
  while (list >> rank) {
    ranks.push_back(rank);
    if (list.peek() != ',') break;
    list.ignore(1);
  }
  return ranks;
}

bool names_rank(const std::string& message, int rank) {
  const std::vector<int> ranks = ranks_named(message);
  return std::find(ranks.begin(), ranks.end(), rank) != ranks.end();
}

// Both stalls are made on purpose, with margins a busy machine keeps: the late rank comes ten warning
// limits late into an engine without a shutdown limit, and the shutdown limit then meets a tensor one
// rank never submits. A stall names every rank missing when it is judged: the late one, and any other
// that a loaded machine held back as long, so the checks ask that the late rank be among them.
TEST(EngineStalls, ALateRankIsNamedAndAMissingTensorFails) {
  if (world_size() < 2) GTEST_SKIP() << "needs two ranks";
  const int late = world_size() - 1;
  const bool is_late = world_rank() == late;
  std::vector<float> a(8, 1.0f), b(8, 0.0f);
  matex_tensor_op_t op = float_sum(nullptr, a.data(), b.data(), a.size());
  long long errors = 0;
  matex_request_t request = nullptr;
  // 1. The last rank submits 3 s after the others (the warning comes at 0.3 s; nothing shuts down):
  //    a warning naming it, then success.
  {
    ScopedEnv warn("MATEX_STALL_WARNING_SECONDS", "0.3");
    ScopedEnv shut("MATEX_STALL_SHUTDOWN_SECONDS", "0");
    std::unique_ptr<StderrCapture> capture;
    if (world_rank() == 0) capture = std::make_unique<StderrCapture>();
    matex_engine_t engine = nullptr;
    ASSERT_EQ(matex_engine_create(test_comm(), &engine), MATEX_SUCCESS) << matex_last_error();
    op.name = "stall/late";
    if (is_late) std::this_thread::sleep_for(std::chrono::seconds(3));
    ASSERT_EQ(matex_engine_submit(engine, &op, 1, &request), MATEX_SUCCESS) << matex_last_error();
    EXPECT_EQ(matex_request_wait(request), MATEX_SUCCESS) << matex_last_error();
    matex_request_free(&request);
    for (float v : b) errors += v != static_cast<float>(world_size());
    EXPECT_EQ(matex_engine_destroy(&engine), MATEX_SUCCESS) << matex_last_error();
    if (capture) {
      const std::string log = capture->finish();
      const size_t warning = log.find("'stall/late' has waited");
      EXPECT_NE(warning, std::string::npos) << "rank 0's stderr lacks the stall warning:\n" << log;
      const bool named = warning != std::string::npos && names_rank(log.substr(warning), late);
      EXPECT_TRUE(named) << "the stall warning does not name rank " << late << ":\n" << log;
      errors += !named;
    }
  }
  // 2. A shutdown limit of 2 s, and the last rank never submits: the others' requests fail, naming it.
  {
    ScopedEnv shut("MATEX_STALL_SHUTDOWN_SECONDS", "2");
    matex_engine_t engine = nullptr;
    ASSERT_EQ(matex_engine_create(test_comm(), &engine), MATEX_SUCCESS) << matex_last_error();
    op.name = "stall/never";
    if (!is_late) {
      ASSERT_EQ(matex_engine_submit(engine, &op, 1, &request), MATEX_SUCCESS) << matex_last_error();
      errors += expect_error(matex_request_wait(request), MATEX_ERR_TIMEOUT, "did not submit it",
                             "a tensor the last rank never submits");
      const std::string message = matex_last_error();
      EXPECT_TRUE(names_rank(message, late)) << "the stall error does not name rank " << late << ": " << message;
      errors += !names_rank(message, late);
      matex_request_free(&request);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    EXPECT_EQ(matex_engine_destroy(&engine), MATEX_SUCCESS) << matex_last_error();
  }
  agree_no_errors(errors, "stalls");
}

// After a second's worth of cycles with nothing pending anywhere (here 200
// cycles of 5 ms), the engines meet every MATEX_IDLE_CYCLE_MS (here 200 ms);
// tensors submitted after such a pause, the ranks arriving one by one, still
// match (a cached name and a new one), and bring the short cycle back.
TEST(EngineIdle, ThePauseSlowsTheCycleAndTheNextTensorsStillMatch) {
  ScopedEnv cycle("MATEX_CYCLE_MS", "5");
  ScopedEnv idle_cycle("MATEX_IDLE_CYCLE_MS", "200");
  matex_engine_t engine = nullptr;
  ASSERT_EQ(matex_engine_create(test_comm(), &engine), MATEX_SUCCESS) << matex_last_error();
  const size_t kCount = 13;
  std::vector<float> in(kCount), out(kCount);
  long long errors = 0;
  auto run = [&](const char* name, int step) {
    for (size_t j = 0; j < kCount; ++j) in[j] = static_cast<float>(input_value(step, j, world_rank()));
    std::fill(out.begin(), out.end(), -1.0f);
    matex_tensor_op_t op = float_sum(name, in.data(), out.data(), kCount);
    matex_request_t request = nullptr;
    ASSERT_EQ(matex_engine_submit(engine, &op, 1, &request), MATEX_SUCCESS) << matex_last_error();
    const matex_status_t status = matex_request_wait(request);
    EXPECT_EQ(status, MATEX_SUCCESS) << name << ": " << matex_last_error();
    errors += status != MATEX_SUCCESS;
    matex_request_free(&request);
    for (size_t j = 0; j < kCount; ++j) {
      double want = 0;
      for (int r = 0; r < world_size(); ++r) want += static_cast<double>(input_value(step, j, r));
      errors += out[j] != static_cast<float>(want);
    }
  };
  // Cycles in a 300 ms window: at most 2 or 3 at 200 ms (a loaded machine only makes fewer).
  auto cycles_in_window = [&] {
    matex_engine_stats_t before{}, after{};
    matex_engine_stats(engine, &before);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    matex_engine_stats(engine, &after);
    return after.cycles - before.cycles;
  };
  run("idle/warm", 0);
  // The switch comes after 200 idle cycles, however long a loaded machine
  // takes for them: wait until a few more have run, then count a window.
  matex_engine_stats_t start{}, now{};
  ASSERT_EQ(matex_engine_stats(engine, &start), MATEX_SUCCESS);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  do {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    ASSERT_EQ(matex_engine_stats(engine, &now), MATEX_SUCCESS);
  } while (now.cycles - start.cycles < 203 && std::chrono::steady_clock::now() < deadline);
  const uint64_t idle_cycles = cycles_in_window();
  EXPECT_LE(idle_cycles, 10u) << "the engine kept cycling while every rank was idle";
  errors += idle_cycles > 10;
  // The ranks come back 40 ms apart, with a cached name and then a new one.
  std::this_thread::sleep_for(std::chrono::milliseconds(40 * world_rank()));
  run("idle/warm", 1);
  run("idle/new", 2);
  // Work brought the 5-ms cycle back: the next 12 cycles take less time than the 11 pauses of 200 ms
  // between them would, however slow a loaded machine makes each short cycle (up to 180 ms).
  ASSERT_EQ(matex_engine_stats(engine, &start), MATEX_SUCCESS);
  const auto busy_start = std::chrono::steady_clock::now();
  do {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    ASSERT_EQ(matex_engine_stats(engine, &now), MATEX_SUCCESS);
  } while (now.cycles - start.cycles < 12 && std::chrono::steady_clock::now() < busy_start + std::chrono::seconds(30));
  const double busy_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - busy_start).count();
  EXPECT_LT(busy_seconds, 2.2) << "the engine stayed slow after tensors came: " << now.cycles - start.cycles
                               << " cycles in " << busy_seconds << " s";
  errors += busy_seconds >= 2.2;
  EXPECT_EQ(matex_engine_destroy(&engine), MATEX_SUCCESS) << matex_last_error();
  agree_no_errors(errors, "tensors after an idle pause");
}



// JSON text as a string literal (host kinds may hold any character but control ones).
std::string quoted(const std::string& text) {
  std::string out = "\"";
  for (char c : text) out += (c == '"' || c == '\\') ? std::string("\\") + c : std::string(1, c);
  return out + "\"";
}

// A tuning file for `comm`'s layout in which flat wins at every size.
std::string flat_everywhere_file(matex_comm_t comm) {
  const char* library = "";
  const char* host = "";
  const char* layout = "";
  EXPECT_EQ(matex_tuning_identity(comm, &library, &host, &layout), MATEX_SUCCESS) << matex_last_error();
  std::string measured_fast = "[", measured_slow = "[";
  for (uint64_t bytes = 64; bytes <= (64u << 20); bytes *= 4) {
    measured_fast += (bytes == 64 ? "[" : ", [") + std::to_string(bytes) + ", 1e-6]";
    measured_slow += (bytes == 64 ? "[" : ", [") + std::to_string(bytes) + ", 1.0]";
  }
  measured_fast += "]";
  measured_slow += "]";
  auto cost = [](const std::string& measured) {
    return "{\"alpha_s\": 0, \"beta_s_per_byte\": 0, \"measured\": " + measured + "}";
  };
  return "{\"format\": \"matex-tuning\", \"version\": 1, \"library\": " + quoted(library) +
         ", \"host_kind\": " + quoted(host) + ", \"layout\": " + quoted(layout) +
         ", \"created\": \"test\", \"ranks\": " + std::to_string(world_size()) +
         ", \"node_sizes\": [], \"cores_shared\": false, \"rounds\": 1, \"collectives\": {\"allreduce\": {"
         "\"flat\": " + cost(measured_fast) + ", \"oneshot\": " + cost(measured_slow) + ", \"rab\": " +
         cost(measured_slow) + ", \"rs_ar_ag\": " + cost(measured_slow) + ", \"rs_ar_ag_cma\": " +
         cost(measured_slow) + "}}}\n";
}

// Zero-copy fusion runs rs_ar_ag on the tensors; where the table picks flat
// for the fused size, the engine's call packs them and runs flat instead.
TEST(EngineUnderATable, FusedTensorsPackedForFlatAreExact) {
  char path[] = "/tmp/matex_engine_table_XXXXXX";
  int written = 1;
  if (world_rank() == 0) {
    const int fd = ::mkstemp(path);
    written = fd >= 0 && static_cast<bool>(std::ofstream(path) << flat_everywhere_file(test_comm()));
    if (fd >= 0) ::close(fd);
  }
  MPI_Bcast(&written, 1, MPI_INT, 0, MPI_COMM_WORLD);  // every rank stops alike if rank 0 could not write
  ASSERT_TRUE(written) << "cannot write a tuning file under /tmp";
  ScopedEnv file("MATEX_CALIBRATE", "file");
  ScopedEnv where("MATEX_TUNING_FILE", path);  // only rank 0's counts
  // The engine's own communicator runs the call: its trace names the algorithm (rank 0's file).
  const std::string trace = std::string(path) + ".trace.json";
  ScopedEnv timeline("MATEX_TIMELINE", trace.c_str());
  matex_comm_t comm = nullptr;
  ASSERT_EQ(matex_init_mpi(MPI_COMM_WORLD, &comm), MATEX_SUCCESS) << matex_last_error();
  const char* text = "";
  matex_describe_selection(comm, &text);
  const std::string selection = text;
  const bool tabled = selection.find("from a tuning file") != std::string::npos;
  // The file must serve wherever the hierarchy works (not on 1 rank, nor without shared memory):
  // then a forced rs_ar_ag stays rs_ar_ag.
  const char* forced = "";
  ASSERT_EQ(matex_set_algorithm(comm, MATEX_COLL_ALLREDUCE, "rs_ar_ag"), MATEX_SUCCESS) << matex_last_error();
  matex_auto_algorithm(comm, MATEX_COLL_ALLREDUCE, 1 << 20, &forced);
  const bool hierarchy = std::string(forced) == "rs_ar_ag";
  ASSERT_EQ(matex_set_algorithm(comm, MATEX_COLL_ALLREDUCE, "auto"), MATEX_SUCCESS) << matex_last_error();
  EXPECT_EQ(tabled, hierarchy) << selection;
  if (tabled) {
    EXPECT_NE(selection.find("every size: flat"), std::string::npos) << selection;
  }
  matex_engine_t engine = nullptr;
  ASSERT_EQ(matex_engine_create(comm, &engine), MATEX_SUCCESS) << matex_last_error();
  FloatSums sums("packed", {0, 1, 13, 4099, 257, 65537});
  const size_t kN = sums.ops.size();
  for (size_t t = 1; t < kN; t += 2) sums.make_in_place(t);
  std::vector<matex_request_t> requests(kN, nullptr);
  ASSERT_EQ(matex_engine_submit(engine, sums.ops.data(), kN, requests.data()), MATEX_SUCCESS) << matex_last_error();
  EXPECT_EQ(matex_request_wait_all(requests.data(), kN), MATEX_SUCCESS) << matex_last_error();
  for (matex_request_t& r : requests) matex_request_free(&r);
  long long wrong = sums.count_wrong();
  EXPECT_EQ(matex_engine_destroy(&engine), MATEX_SUCCESS) << matex_last_error();  // writes the trace
  EXPECT_EQ(matex_finalize(&comm), MATEX_SUCCESS) << matex_last_error();
  if (world_rank() == 0) {
    std::stringstream events;
    events << std::ifstream(trace).rdbuf();
    if (tabled) {
      EXPECT_NE(events.str().find("\"algorithm\": \"flat\""), std::string::npos) << events.str();
      EXPECT_EQ(events.str().find("\"algorithm\": \"rs_ar_ag\""), std::string::npos) << events.str();
    }
    std::remove(trace.c_str());
    std::remove(path);
  }
  agree_no_errors(wrong, "fused tensors packed for flat");
}

}  // namespace
}  // namespace matex_test
