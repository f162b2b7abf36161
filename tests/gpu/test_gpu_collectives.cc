// test_gpu_collectives.cc - every collective on device buffers, through the C
// API, on both device paths (nccl_hier where NCCL works, and staged), checked
// against references computed in the test (tests/mpi/reduction_patterns.h).
// Counts cover 0, 1, primes, and sizes that cross staging chunks.
#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "exact_values.h"
#include "matexcomm/matexcomm.h"
#include "mpi_test_util.h"
#include "reduction_patterns.h"

namespace {

using matex_test::agree_no_errors;
using matex_test::ReductionPattern;
using matex_test::with_dtype;
using matex_test::world_rank;
using matex_test::world_size;

// 16 KiB staging chunks make the larger counts cross many chunks.
constexpr size_t kCounts[] = {0, 1, 7, 1021, 65537, 300007};

// Device memory under RAII, with host copies in and out.
class DeviceArray {
 public:
  explicit DeviceArray(size_t bytes) : bytes_(bytes) { EXPECT_EQ(cudaMalloc(&data_, bytes ? bytes : 1), cudaSuccess); }
  ~DeviceArray() { cudaFree(data_); }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  void* get() const { return data_; }
  // A cudaMemcpy from pageable memory may return before the copy has landed,
  // and the collectives run on a non-blocking stream: wait for it.
  void upload(const void* host) {
    ASSERT_EQ(cudaMemcpy(data_, host, bytes_, cudaMemcpyHostToDevice), cudaSuccess);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  }
  void download(void* host) const {
    ASSERT_EQ(cudaMemcpy(host, data_, bytes_, cudaMemcpyDeviceToHost), cudaSuccess);
  }

 private:
  void* data_ = nullptr;
  size_t bytes_;
};

// A communicator whose device path is `path` (MATEX_CUDA_ALGO), with a stream of its own.
class GpuComm {
 public:
  explicit GpuComm(const char* path) {
    setenv("MATEX_CUDA_ALGO", path, 1);
    setenv("MATEX_CUDA_STAGING_CHUNK_BYTES", "16K", 1);
    EXPECT_EQ(matex_init(&comm_), MATEX_SUCCESS) << matex_last_error();
    unsetenv("MATEX_CUDA_ALGO");
    unsetenv("MATEX_CUDA_STAGING_CHUNK_BYTES");
    EXPECT_EQ(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), cudaSuccess);
    EXPECT_EQ(matex_comm_set_cuda_stream(comm_, stream_), MATEX_SUCCESS) << matex_last_error();
  }
  ~GpuComm() {
    matex_finalize(&comm_);
    cudaStreamDestroy(stream_);
  }
  matex_comm_t get() const { return comm_; }
  void sync() const { ASSERT_EQ(cudaStreamSynchronize(stream_), cudaSuccess); }

 private:
  matex_comm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
};

// The device algorithm `path` must run: auto is nccl_hier unless two ranks of
// a node share a GPU (NCCL refuses that), when every rank stages.
std::string expected_algorithm(matex_comm_t comm, const std::string& path) {
  if (path == "staged") return "staged";
  int local_size = 1, devices = 0;
  matex_comm_local_size(comm, &local_size);
  cudaGetDeviceCount(&devices);
  int shared = local_size > devices ? 1 : 0, anywhere = 0;
  MPI_Allreduce(&shared, &anywhere, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  return anywhere ? "staged" : "nccl_hier";
}

std::string last_algorithm(matex_comm_t comm, matex_collective_t coll) {
  const char* name = "";
  EXPECT_EQ(matex_last_algorithm(comm, coll, &name), MATEX_SUCCESS);
  return name;
}

class GpuCollectives : public ::testing::TestWithParam<const char*> {};

TEST_P(GpuCollectives, AllreduceEveryDtypeOpAndCount) {
  GpuComm comm(GetParam());
  const int p = world_size(), me = world_rank();
  long long wrong = 0;
  for (matex_dtype_t dtype : matex_test::kAllDtypes) {
    for (matex_op_t op : matex_test::kAllOps) {
      if (op == MATEX_AVG && !matex_test::is_floating(dtype)) continue;
      for (size_t count : kCounts) {
        for (bool in_place : {false, true}) {
          with_dtype(dtype, [&](auto traits) {
            using T = typename decltype(traits)::Storage;
            const ReductionPattern pattern(op, decltype(traits)::kUnsigned, p);
            std::vector<T> host(count), result(count);
            for (size_t i = 0; i < count; ++i) host[i] = decltype(traits)::encode(pattern.input(i, me));
            DeviceArray send(count * sizeof(T)), recv(count * sizeof(T));
            send.upload(host.data());
            const void* from = in_place ? MATEX_IN_PLACE : send.get();
            if (in_place) recv.upload(host.data());
            ASSERT_EQ(matex_allreduce(comm.get(), from, recv.get(), count, dtype, op), MATEX_SUCCESS)
                << matex_last_error();
            comm.sync();
            recv.download(result.data());
            for (size_t i = 0; i < count; ++i) {
              if (decltype(traits)::decode(result[i]) != static_cast<double>(pattern.expected(i))) ++wrong;
            }
          });
        }
      }
    }
  }
  agree_no_errors(wrong, "wrong allreduce elements over all dtypes, ops and counts");
  EXPECT_EQ(last_algorithm(comm.get(), MATEX_COLL_ALLREDUCE), expected_algorithm(comm.get(), GetParam()));
}

TEST_P(GpuCollectives, BroadcastFromEveryRoot) {
  GpuComm comm(GetParam());
  const int p = world_size(), me = world_rank();
  long long wrong = 0;
  for (int root = 0; root < p; ++root) {
    for (size_t count : kCounts) {
      std::vector<int32_t> host(count), result(count);
      for (size_t i = 0; i < count; ++i) host[i] = static_cast<int32_t>(matex_test::plain_value(i, me == root ? root : 99, false));
      DeviceArray buffer(count * sizeof(int32_t));
      buffer.upload(host.data());
      ASSERT_EQ(matex_broadcast(comm.get(), buffer.get(), count, MATEX_INT32, root), MATEX_SUCCESS) << matex_last_error();
      comm.sync();
      buffer.download(result.data());
      for (size_t i = 0; i < count; ++i) wrong += result[i] != matex_test::plain_value(i, root, false);
    }
  }
  agree_no_errors(wrong, "wrong broadcast elements over all roots and counts");
  EXPECT_EQ(last_algorithm(comm.get(), MATEX_COLL_BROADCAST), expected_algorithm(comm.get(), GetParam()));
}

TEST_P(GpuCollectives, AllgatherAndReduceScatter) {
  GpuComm comm(GetParam());
  const size_t p = static_cast<size_t>(world_size());
  const int me = world_rank();
  long long wrong = 0;
  for (size_t count : kCounts) {
    std::vector<float> mine(count), gathered(count * p);
    for (size_t i = 0; i < count; ++i) mine[i] = static_cast<float>(matex_test::plain_value(i, me, false));
    DeviceArray send(count * sizeof(float)), recv(count * p * sizeof(float));
    send.upload(mine.data());
    ASSERT_EQ(matex_allgather(comm.get(), send.get(), recv.get(), count, MATEX_FLOAT32), MATEX_SUCCESS)
        << matex_last_error();
    comm.sync();
    recv.download(gathered.data());
    for (size_t r = 0; r < p; ++r)
      for (size_t i = 0; i < count; ++i) wrong += gathered[r * count + i] != matex_test::plain_value(i, int(r), false);

    const ReductionPattern pattern(MATEX_SUM, false, int(p));
    std::vector<double> input(count * p), block(count);
    for (size_t i = 0; i < count * p; ++i) input[i] = static_cast<double>(pattern.input(i, me));
    DeviceArray whole(count * p * sizeof(double)), out(count * sizeof(double));
    whole.upload(input.data());
    ASSERT_EQ(matex_reduce_scatter(comm.get(), whole.get(), out.get(), count, MATEX_FLOAT64, MATEX_SUM), MATEX_SUCCESS)
        << matex_last_error();
    comm.sync();
    out.download(block.data());
    for (size_t i = 0; i < count; ++i) wrong += block[i] != static_cast<double>(pattern.expected(me * count + i));
  }
  agree_no_errors(wrong, "wrong allgather and reduce_scatter elements over all counts");
}

// NCCL has no 16-bit integers and no bitwise reductions.
bool nccl_cannot_reduce(matex_dtype_t dtype, matex_op_t op) {
  return dtype == MATEX_INT16 || dtype == MATEX_UINT16 || matex_test::is_bitwise(op);
}

// The newer dtypes with every op and the bitwise ops with every integer dtype.
// The staged path serves them all; NCCL serves bool (as uint8 max/min),
// uint32 and uint64, and under auto the pairs it lacks take the staged path
// (ForcedNcclHierRefusesWhatNcclLacks: forced nccl_hier refuses them).
TEST_P(GpuCollectives, AllreduceNewerDtypesAndBitwiseOps) {
  GpuComm comm(GetParam());
  const int p = world_size(), me = world_rank();
  const bool nccl = expected_algorithm(comm.get(), GetParam()) == "nccl_hier";
  long long wrong = 0;
  for (const matex_test::DtypeOp& pair : matex_test::new_reduction_pairs()) {
    const matex_dtype_t dtype = pair.dtype;
    const matex_op_t op = pair.op;
    if (matex_test::refused_pair(dtype, op)) continue;  // invalid on every path
    for (size_t count : {size_t(1), size_t(1021), size_t(65537)}) {
      with_dtype(dtype, [&](auto traits) {
        using Traits = decltype(traits);
        using T = typename Traits::Storage;
        const ReductionPattern pattern(op, Traits::kUnsigned, p, Traits::kBool);
        std::vector<T> host(count), result(count);
        for (size_t i = 0; i < count; ++i) host[i] = Traits::encode(pattern.input(i, me));
        DeviceArray send(count * sizeof(T)), recv(count * sizeof(T));
        send.upload(host.data());
        const matex_status_t status = matex_allreduce(comm.get(), send.get(), recv.get(), count, dtype, op);
        const std::string what = std::string(matex_dtype_name(dtype)) + " " + matex_op_name(op) + " count " +
                                 std::to_string(count) + " on " + GetParam();
        ASSERT_EQ(status, MATEX_SUCCESS) << what << ": " << matex_last_error();
        const std::string ran = last_algorithm(comm.get(), MATEX_COLL_ALLREDUCE);
        const std::string expected = nccl && !nccl_cannot_reduce(dtype, op) ? "nccl_hier" : "staged";
        EXPECT_EQ(ran, expected) << what;
        wrong += ran != expected;
        comm.sync();
        recv.download(result.data());
        for (size_t i = 0; i < count; ++i) {
          if (Traits::decode(result[i]) != static_cast<double>(pattern.expected(i))) ++wrong;
        }
      });
    }
  }
  agree_no_errors(wrong, "wrong results or statuses of the newer dtypes and bitwise ops on device buffers");
}

// Data movement needs no NCCL type: int16 and bool broadcast and reduce_scatter
// on device buffers (reduce_scatter of int16, which NCCL lacks, is staged under auto).
TEST_P(GpuCollectives, NewerDtypesBroadcastAndReduceScatter) {
  GpuComm comm(GetParam());
  const bool nccl = expected_algorithm(comm.get(), GetParam()) == "nccl_hier";
  int nodes = 0;
  matex_comm_node_count(comm.get(), &nodes);
  const size_t p = static_cast<size_t>(world_size());
  const int me = world_rank();
  const int root = world_size() - 1;
  long long wrong = 0;
  for (size_t count : {size_t(1), size_t(1021)}) {
    std::vector<int16_t> host(count), result(count);
    for (size_t i = 0; i < count; ++i) host[i] = static_cast<int16_t>(matex_test::plain_value(i, me == root ? root : 99, false));
    DeviceArray buffer(count * sizeof(int16_t));
    buffer.upload(host.data());
    ASSERT_EQ(matex_broadcast(comm.get(), buffer.get(), count, MATEX_INT16, root), MATEX_SUCCESS) << matex_last_error();
    comm.sync();
    buffer.download(result.data());
    for (size_t i = 0; i < count; ++i) wrong += result[i] != matex_test::plain_value(i, root, false);

    for (matex_dtype_t dtype : {MATEX_BOOL, MATEX_INT16}) {
      with_dtype(dtype, [&](auto traits) {
        using Traits = decltype(traits);
        using T = typename Traits::Storage;
        const ReductionPattern pattern(MATEX_SUM, Traits::kUnsigned, int(p), Traits::kBool);
        std::vector<T> input(count * p), block(count);
        for (size_t i = 0; i < count * p; ++i) input[i] = Traits::encode(pattern.input(i, me));
        DeviceArray whole(count * p * sizeof(T)), out(count * sizeof(T));
        whole.upload(input.data());
        const matex_status_t status = matex_reduce_scatter(comm.get(), whole.get(), out.get(), count, dtype, MATEX_SUM);
        ASSERT_EQ(status, MATEX_SUCCESS) << matex_dtype_name(dtype) << ": " << matex_last_error();
        // NCCL on one node, where it has the type; else (int16 under auto too) staged.
        const std::string expected = nccl && nodes == 1 && dtype != MATEX_INT16 ? "nccl" : "staged";
        const std::string ran = last_algorithm(comm.get(), MATEX_COLL_REDUCE_SCATTER);
        EXPECT_EQ(ran, expected) << matex_dtype_name(dtype);
        wrong += ran != expected;
        comm.sync();
        out.download(block.data());
        for (size_t i = 0; i < count; ++i) {
          wrong += Traits::decode(block[i]) != static_cast<double>(pattern.expected(me * count + i));
        }
      });
    }
  }
  agree_no_errors(wrong, "wrong int16/bool broadcast and reduce_scatter elements on device buffers");
}

TEST_P(GpuCollectives, MixedHostAndDeviceBuffersAreRefused) {
  GpuComm comm(GetParam());
  std::vector<float> host(16, 1.0f);
  DeviceArray device(16 * sizeof(float));
  EXPECT_EQ(matex_allreduce(comm.get(), host.data(), device.get(), 16, MATEX_FLOAT32, MATEX_SUM), MATEX_ERR_INVALID_ARG);
  EXPECT_NE(std::string(matex_last_error()).find("sendbuf is host memory"), std::string::npos) << matex_last_error();
}

INSTANTIATE_TEST_SUITE_P(Paths, GpuCollectives, ::testing::Values("auto", "staged"));

// Forced nccl_hier refuses the reductions NCCL lacks with MATEX_ERR_UNSUPPORTED,
// naming the dtype or op, on every rank alike and before any communication,
// so the communicator goes on working (the next call runs on it). Only where
// NCCL works (not when ranks of a node share a GPU: nccl_hier fails there).
TEST(GpuCollectivesForced, NcclHierRefusesWhatNcclLacks) {
  bool nccl = false;
  {
    GpuComm probe("auto");
    nccl = expected_algorithm(probe.get(), "auto") == "nccl_hier";
  }
  if (!nccl) GTEST_SKIP() << "NCCL is not usable here (ranks share a GPU), so nccl_hier cannot be forced";
  GpuComm comm("nccl_hier");
  const int p = world_size(), me = world_rank();
  long long wrong = 0;
  const size_t count = 1021;
  for (const matex_test::DtypeOp& pair : matex_test::new_reduction_pairs()) {
    if (matex_test::refused_pair(pair.dtype, pair.op) || !nccl_cannot_reduce(pair.dtype, pair.op)) continue;
    with_dtype(pair.dtype, [&](auto traits) {
      using T = typename decltype(traits)::Storage;
      DeviceArray send(count * sizeof(T)), recv(count * sizeof(T));
      const matex_status_t status = matex_allreduce(comm.get(), send.get(), recv.get(), count, pair.dtype, pair.op);
      const std::string what = std::string(matex_dtype_name(pair.dtype)) + " " + matex_op_name(pair.op);
      EXPECT_EQ(status, MATEX_ERR_UNSUPPORTED) << what;
      const std::string message = matex_last_error();
      const char* named = matex_test::is_bitwise(pair.op) ? matex_op_name(pair.op) : matex_dtype_name(pair.dtype);
      EXPECT_NE(message.find(named), std::string::npos) << what << ": " << message;
      wrong += status != MATEX_ERR_UNSUPPORTED;
    });
  }
  // Still usable: an int32 sum runs on NCCL and is right.
  const ReductionPattern pattern(MATEX_SUM, false, p);
  std::vector<int32_t> host(count), result(count);
  for (size_t i = 0; i < count; ++i) host[i] = static_cast<int32_t>(pattern.input(i, me));
  DeviceArray send(count * sizeof(int32_t)), recv(count * sizeof(int32_t));
  send.upload(host.data());
  ASSERT_EQ(matex_allreduce(comm.get(), send.get(), recv.get(), count, MATEX_INT32, MATEX_SUM), MATEX_SUCCESS)
      << matex_last_error();
  comm.sync();
  recv.download(result.data());
  for (size_t i = 0; i < count; ++i) wrong += result[i] != static_cast<double>(pattern.expected(i));
  EXPECT_EQ(last_algorithm(comm.get(), MATEX_COLL_ALLREDUCE), "nccl_hier");
  agree_no_errors(wrong, "forced nccl_hier: statuses of the pairs NCCL lacks, or a wrong int32 sum after them");
}

// The engine's fused allreduce of device tensors (batched pack/unpack and scaling kernels).
TEST(GpuEngine, FusedDeviceTensorsWithScaling) {
  matex_comm_t comm = nullptr;
  ASSERT_EQ(matex_init(&comm), MATEX_SUCCESS) << matex_last_error();
  matex_engine_t engine = nullptr;
  ASSERT_EQ(matex_engine_create(comm, &engine), MATEX_SUCCESS) << matex_last_error();
  const int p = world_size(), me = world_rank();
  const size_t counts[] = {1, 7, 1021, 5, 0, 33};
  constexpr size_t n = sizeof counts / sizeof counts[0];
  std::vector<std::unique_ptr<DeviceArray>> buffers;
  std::vector<matex_tensor_op_t> ops(n);
  std::vector<std::string> names(n);
  for (size_t t = 0; t < n; ++t) {
    std::vector<float> host(counts[t]);
    for (size_t i = 0; i < counts[t]; ++i) host[i] = static_cast<float>((i + t + me) % 9);
    buffers.push_back(std::make_unique<DeviceArray>(counts[t] * sizeof(float)));
    buffers.back()->upload(host.data());
    names[t] = "gpu.tensor." + std::to_string(t);
    ops[t].name = names[t].c_str();
    ops[t].coll = MATEX_COLL_ALLREDUCE;
    ops[t].sendbuf = MATEX_IN_PLACE;
    ops[t].recvbuf = buffers.back()->get();
    ops[t].count = counts[t];
    ops[t].dtype = MATEX_FLOAT32;
    ops[t].op = MATEX_SUM;
    ops[t].prescale = 2.0;
    ops[t].postscale = 0.25;
  }
  std::vector<matex_request_t> requests(n);
  ASSERT_EQ(matex_engine_submit(engine, ops.data(), n, requests.data()), MATEX_SUCCESS) << matex_last_error();
  EXPECT_EQ(matex_request_wait_all(requests.data(), n), MATEX_SUCCESS) << matex_last_error();
  long long wrong = 0;
  for (size_t t = 0; t < n; ++t) {
    std::vector<float> result(counts[t]);
    buffers[t]->download(result.data());
    for (size_t i = 0; i < counts[t]; ++i) {
      double sum = 0;
      for (int r = 0; r < p; ++r) sum += static_cast<double>((i + t + r) % 9);
      wrong += result[i] != static_cast<float>(sum * 2.0 * 0.25);
    }
    matex_request_free(&requests[t]);
  }
  agree_no_errors(wrong, "wrong elements of the engine's fused device tensors");
  EXPECT_EQ(matex_engine_destroy(&engine), MATEX_SUCCESS);
  EXPECT_EQ(matex_finalize(&comm), MATEX_SUCCESS);
}

}  // namespace
