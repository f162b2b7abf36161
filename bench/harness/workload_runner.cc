#include "workload_runner.h"

#include <mpi.h>

#include <chrono>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "aligned_buffer.h"
#include "resnet50_shapes.h"

namespace matexbench {

namespace {

void check(matex_status_t status, const char* what) {
  if (status != MATEX_SUCCESS) throw std::runtime_error(std::string(what) + ": " + matex_last_error());
}

// Element i of rank r in step s: a small integer, so sums are exact in float32.
float input(size_t i, int rank, int step) { return static_cast<float>(static_cast<int>((i * 7 + rank * 3 + step) % 5) - 2); }

double over_ranks(double value, MPI_Op op) {
  MPI_Allreduce(MPI_IN_PLACE, &value, 1, MPI_DOUBLE, op, MPI_COMM_WORLD);
  return value;
}
double max_over_ranks(double value) { return over_ranks(value, MPI_MAX); }

class EngineHandle {
 public:
  explicit EngineHandle(matex_comm_t comm) { check(matex_engine_create(comm, &engine_), "matex_engine_create"); }
  ~EngineHandle() {
    if (engine_ != nullptr) matex_engine_destroy(&engine_);
  }
  EngineHandle(const EngineHandle&) = delete;
  EngineHandle& operator=(const EngineHandle&) = delete;
  matex_engine_t get() const { return engine_; }

 private:
  matex_engine_t engine_ = nullptr;
};

}  // namespace

std::vector<WorkloadTensor> workload_tensors(const std::string& workload) {
  std::vector<WorkloadTensor> tensors;
  if (workload == "small") {
    for (int t = 0; t < 1000; ++t) tensors.push_back({"small/" + std::to_string(t), 1024});
    return tensors;
  }
  if (workload != "resnet50") return tensors;
  std::istringstream lines(kResnet50Shapes);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.empty() || line[0] == '#') continue;
    const size_t tab = line.find('\t');
    WorkloadTensor tensor{line.substr(0, tab), 1};
    std::istringstream dims(line.substr(tab + 1));
    std::string dim;
    while (std::getline(dims, dim, 'x')) tensor.count *= std::stoul(dim);
    tensors.push_back(tensor);
  }
  return {tensors.rbegin(), tensors.rend()};  // gradients arrive last layer first
}

WorkloadResult run_workload(matex_comm_t comm, const std::vector<WorkloadTensor>& tensors, int steps,
                            int warmup_steps, bool check_results) {
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  WorkloadResult result;
  result.tensors = tensors.size();
  std::vector<size_t> offsets;
  for (const WorkloadTensor& t : tensors) {
    offsets.push_back(result.elements);
    result.elements += t.count;
  }
  AlignedBuffer send(result.elements * sizeof(float));
  AlignedBuffer recv(result.elements * sizeof(float));
  float* in = static_cast<float*>(send.data());
  float* out = static_cast<float*>(recv.data());
  EngineHandle engine(comm);

  std::vector<matex_tensor_op_t> ops(tensors.size());
  for (size_t t = 0; t < tensors.size(); ++t) {
    ops[t] = matex_tensor_op_t{};
    ops[t].name = tensors[t].name.c_str();
    ops[t].coll = MATEX_COLL_ALLREDUCE;
    ops[t].sendbuf = in + offsets[t];
    ops[t].recvbuf = out + offsets[t];
    ops[t].count = tensors[t].count;
    ops[t].dtype = MATEX_FLOAT32;
    ops[t].op = MATEX_SUM;
  }
  std::vector<matex_request_t> requests(tensors.size(), nullptr);
  double step_seconds = 0, single_seconds = 0;
  const int total = warmup_steps + steps;
  for (int step = 0; step < total; ++step) {
    for (size_t i = 0; i < result.elements; ++i) in[i] = input(i, rank, step);
    MPI_Barrier(MPI_COMM_WORLD);
    double start = MPI_Wtime();
    for (size_t t = 0; t < ops.size(); ++t) check(matex_engine_submit(engine.get(), &ops[t], 1, &requests[t]), "submit");
    check(matex_request_wait_all(requests.data(), requests.size()), "tensors");
    for (matex_request_t& r : requests) matex_request_free(&r);
    const double step_time = max_over_ranks(MPI_Wtime() - start);
    if (check_results && step == total - 1) {
      for (size_t i = 0; i < result.elements; ++i) {
        float want = 0;
        for (int r = 0; r < size; ++r) want += input(i, r, step);
        result.wrong += out[i] != want;
      }
      MPI_Allreduce(MPI_IN_PLACE, &result.wrong, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    start = MPI_Wtime();
    check(matex_allreduce(comm, in, out, result.elements, MATEX_FLOAT32, MATEX_SUM), "matex_allreduce");
    const double single_time = max_over_ranks(MPI_Wtime() - start);
    if (step >= warmup_steps) {
      step_seconds += step_time;
      single_seconds += single_time;
    }
  }
  matex_engine_stats_t stats{};
  check(matex_engine_stats(engine.get(), &stats), "matex_engine_stats");
  // Steady-state overhead: a quiet window of idle cycles (nothing submitted,
  // every tensor cached), without the steps' collectives competing for the cores.
  MPI_Barrier(MPI_COMM_WORLD);
  check(matex_engine_stats_reset(engine.get()), "matex_engine_stats_reset");
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  matex_engine_stats_t quiet{};
  check(matex_engine_stats(engine.get(), &quiet), "matex_engine_stats");
  stats.idle_coordination_us = quiet.idle_coordination_us;
  result.step_us = step_seconds / steps * 1e6;
  result.single_allreduce_us = single_seconds / steps * 1e6;
  result.ratio = result.step_us / result.single_allreduce_us;
  result.tensors_per_second = static_cast<double>(result.tensors) / (result.step_us * 1e-6);
  // A rank whose timer fires first waits in the cycle for the others to wake
  // (how late a VM wakes a sleeping core varies by tens of microseconds); the
  // rank that comes last sees only the bitwise-and allreduce itself.
  result.idle_coordination_us = over_ranks(stats.idle_coordination_us, MPI_MIN);
  result.idle_coordination_max_us = max_over_ranks(stats.idle_coordination_us);
  result.cached_cycles = stats.cached_cycles;
  result.full_cycles = stats.full_cycles;
  result.fused_responses = stats.fused_responses;
  return result;
}

}  // namespace matexbench
