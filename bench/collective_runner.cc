// collective_runner.cc - see collective_runner.h.
#include "collective_runner.h"

#include <mpi.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <random>
#include <stdexcept>
#include <utility>

#include "element_codec.h"

namespace matexbench {

namespace {

// The contenders' order in iteration `it`: shuffled afresh each time, the same
// on every rank (a fixed seed per iteration, and the shuffle written out
// rather than std::shuffle's unspecified one). A fixed rotation would put
// each contender after the same one nearly every time, and what a call
// leaves in the caches changes the next one: rs_ar_ag_cma of 1 MiB out of
// place took 1.5-1.7x longer after MPI's own allreduce than after rs_ar_ag
// on 2 ranks here (docs/benchmarks.md).
std::vector<size_t> contender_order(size_t contenders, int it) {
  std::vector<size_t> order(contenders);
  std::iota(order.begin(), order.end(), size_t{0});
  std::mt19937_64 random(0x6d61746578ull + static_cast<uint64_t>(it));
  for (size_t i = contenders; i > 1; --i) std::swap(order[i - 1], order[random() % i]);
  return order;
}
// The options accept the four collectives matex-bench times; reduce is not one.
std::logic_error not_timed() { return std::logic_error("matex-bench does not time reduce"); }

constexpr int kPoison = 0xA5;  // never a valid result: every expected value is small

// The bytes of a call's buffers, from their start: what it reads from send,
// what it reads or writes in recv, and its output in recv.
struct CallExtent {
  size_t send_bytes = 0;
  size_t recv_bytes = 0;
  size_t output_bytes = 0;
};

CallExtent extent_of(const CaseSpec& spec, int world_size) {
  const size_t n = spec.count * matex_dtype_size(spec.dtype);
  const size_t np = n * static_cast<size_t>(world_size);
  CallExtent e;
  switch (spec.coll) {
    case MATEX_COLL_ALLREDUCE: e = {n, n, n}; break;
    case MATEX_COLL_REDUCE_SCATTER: e = {np, spec.in_place ? np : n, n}; break;
    case MATEX_COLL_BROADCAST: e = {0, n, n}; break;
    case MATEX_COLL_ALLGATHER: e = {n, np, np}; break;
    case MATEX_COLL_REDUCE: throw not_timed();
  }
  if (spec.in_place) e.send_bytes = 0;
  return e;
}

}  // namespace

size_t call_count_for(matex_collective_t coll, size_t bytes, size_t element_bytes, int world_size) {
  const bool per_rank = coll == MATEX_COLL_ALLGATHER || coll == MATEX_COLL_REDUCE_SCATTER;
  return bytes / element_bytes / (per_rank ? static_cast<size_t>(world_size) : 1);
}

size_t row_elements(matex_collective_t coll, size_t call_count, int world_size) {
  const bool per_rank = coll == MATEX_COLL_ALLGATHER || coll == MATEX_COLL_REDUCE_SCATTER;
  return call_count * (per_rank ? static_cast<size_t>(world_size) : 1);
}

double bus_factor(matex_collective_t coll, int world_size) {
  const double p = world_size;
  switch (coll) {
    case MATEX_COLL_ALLREDUCE: return 2.0 * (p - 1) / p;
    case MATEX_COLL_BROADCAST: return 1.0;
    default: return (p - 1) / p;  // allgather, reduce_scatter
  }
}

CollectiveRunner::CollectiveRunner(matex::Communicator& comm, const MpiBaseline* mpi, AlignedBuffer& send,
                                   AlignedBuffer& recv, int iterations, int warmup_iterations, bool check,
                                   bool scale_iterations, DeviceBuffers* device,
                                   std::vector<std::string> forced_algorithms)
    : comm_(comm), mpi_(mpi), send_(send), recv_(recv), iterations_(iterations),
      warmup_iterations_(warmup_iterations), scale_iterations_(scale_iterations), check_(check),
      rank_(comm.rank()), world_size_(comm.size()), device_(device), forced_(std::move(forced_algorithms)) {
  if (device_ != nullptr && mpi_ != nullptr && !device_->mpi_takes_device_buffers()) {
    mpi_staging_send_ = std::make_unique<AlignedBuffer>(send_.size());
    mpi_staging_recv_ = std::make_unique<AlignedBuffer>(recv_.size());
  }
}

int CollectiveRunner::timed_iterations(size_t bytes) const {
  constexpr size_t kFullSize = 1u << 20;
  constexpr size_t kMaxFactor = 100;
  if (!scale_iterations_ || bytes >= kFullSize) return iterations_;
  const size_t factor = std::min(kMaxFactor, kFullSize / std::max<size_t>(bytes, 1));
  return static_cast<int>(std::min<size_t>(static_cast<size_t>(iterations_) * factor, INT_MAX));
}

Measurement CollectiveRunner::run(const CaseSpec& spec, const ReferencePatterns& patterns) {
  // Contenders: 0 is ours as set (auto under --compare all), 1..k the forced
  // algorithms, then MPI when it is compared.
  const size_t forced = forced_.size();
  const size_t mpi_index = 1 + forced;
  const size_t contenders = mpi_index + (mpi_ != nullptr ? 1 : 0);
  std::vector<double> seconds(contenders, 0.0);
  std::vector<uint64_t> wrong(contenders, 0);
  std::vector<char> runs_as_itself(contenders, 1);
  std::string algorithm;
  const int iterations = timed_iterations(spec.count * matex_dtype_size(spec.dtype));
  const int total = warmup_iterations_ + iterations;
  for (int it = 0; it < total; ++it) {
    const bool timed = it >= warmup_iterations_;
    const bool last = it == total - 1;
    const std::vector<size_t> order = forced == 0 ? std::vector<size_t>() : contender_order(contenders, it);
    for (size_t turn = 0; turn < contenders; ++turn) {
      const size_t c = forced == 0 ? turn : order[turn];
      if (!runs_as_itself[c]) continue;
      const bool ours = c < mpi_index;
      if (forced > 0 && ours) set_algorithm(spec.coll, c == 0 ? "auto" : forced_[c - 1]);
      const uint64_t seq = next_seq_++;
      prepare(spec, patterns, seq, last);
      if (device_ != nullptr) upload(spec, last);
      const double call_seconds = timed_call(spec, ours);
      if (timed) seconds[c] += call_seconds;
      if (ours) {
        const char* used = "";
        matex_last_algorithm(comm_.handle(), spec.coll, &used);
        if (c == 0) algorithm = used;
        else if (forced_[c - 1] != used) runs_as_itself[c] = 0;  // same verdict on every rank
      }
      if (last && check_ && runs_as_itself[c]) {
        if (device_ != nullptr)
          device_->to_host(recv_.data(), device_->recv(), extent_of(spec, world_size_).output_bytes);
        wrong[c] = count_wrong(spec, patterns, seq);
      }
    }
  }
  if (forced > 0) set_algorithm(spec.coll, "auto");

  std::vector<double> mean(contenders);
  for (size_t c = 0; c < contenders; ++c) mean[c] = seconds[c] / iterations;
  MPI_Allreduce(MPI_IN_PLACE, mean.data(), static_cast<int>(contenders), MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  MPI_Allreduce(MPI_IN_PLACE, wrong.data(), static_cast<int>(contenders), MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
  Measurement result;
  result.checked = check_;
  result.algorithm = algorithm;
  result.time_us = mean[0] * 1e6;
  result.wrong = wrong[0];
  for (size_t c = 1; c < mpi_index; ++c) {
    result.forced_time_us.push_back(runs_as_itself[c] ? mean[c] * 1e6 : -1.0);
    result.wrong += wrong[c];  // a wrong value of any of ours fails the run
  }
  if (mpi_ != nullptr) {
    result.mpi_time_us = mean[mpi_index] * 1e6;
    result.mpi_wrong = wrong[mpi_index];
  }
  return result;
}

void CollectiveRunner::set_algorithm(matex_collective_t coll, const std::string& name) {
  if (matex_set_algorithm(comm_.handle(), coll, name.c_str()) != MATEX_SUCCESS)
    throw std::runtime_error("matex_set_algorithm(" + name + "): " + matex_last_error());
}

// Writes the inputs of call `seq`; poisons every output element that the call
// must overwrite when `poison` (the checked call) or when it is not an input.
void CollectiveRunner::prepare(const CaseSpec& spec, const ReferencePatterns& patterns, uint64_t seq, bool poison) {
  const size_t es = matex_dtype_size(spec.dtype);
  const size_t n = spec.count;
  const size_t p = static_cast<size_t>(world_size_);
  switch (spec.coll) {
    case MATEX_COLL_ALLREDUCE:
    case MATEX_COLL_REDUCE_SCATTER: {
      const size_t inputs = spec.coll == MATEX_COLL_ALLREDUCE ? n : n * p;
      const size_t outputs = n;
      if (spec.in_place) {
        patterns.fill_input(rank_, seq, 0, inputs, recv_.data());
      } else {
        patterns.fill_input(rank_, seq, 0, inputs, send_.data());
        if (poison) std::memset(recv_.data(), kPoison, outputs * es);
      }
      break;
    }
    case MATEX_COLL_BROADCAST:
      if (rank_ == spec.root) patterns.fill_input(rank_, seq, 0, n, recv_.data());
      else std::memset(recv_.data(), kPoison, n * es);
      break;
    case MATEX_COLL_ALLGATHER:
      if (spec.in_place) {
        std::memset(recv_.data(), kPoison, n * p * es);
        patterns.fill_input(rank_, seq, 0, n, recv_.bytes() + rank_ * n * es);
      } else {
        patterns.fill_input(rank_, seq, 0, n, send_.data());
        if (poison) std::memset(recv_.data(), kPoison, n * p * es);
      }
      break;
    case MATEX_COLL_REDUCE: throw not_timed();
  }
}

// Copies what prepare() wrote to the device buffers: the inputs, and recv
// where it holds inputs or poison.
void CollectiveRunner::upload(const CaseSpec& spec, bool poison) {
  const CallExtent e = extent_of(spec, world_size_);
  device_->to_device(device_->send(), send_.data(), e.send_bytes);
  if (poison || spec.in_place || spec.coll == MATEX_COLL_BROADCAST)
    device_->to_device(device_->recv(), recv_.data(), e.recv_bytes);
}

double CollectiveRunner::timed_call(const CaseSpec& spec, bool ours) {
  const void* send = spec.in_place ? nullptr : device_ != nullptr ? device_->send() : send_.data();
  void* recv = device_ != nullptr ? device_->recv() : recv_.data();
  MPI_Barrier(MPI_COMM_WORLD);
  const double start = MPI_Wtime();
  if (!ours) {
    if (device_ != nullptr) device_mpi_call(spec);
    else mpi_->run(spec.coll, send, recv, spec.count, spec.dtype, spec.op, spec.root);
    return MPI_Wtime() - start;
  }
  const void* matex_send = send != nullptr ? send : MATEX_IN_PLACE;
  switch (spec.coll) {
    case MATEX_COLL_ALLREDUCE: comm_.allreduce(matex_send, recv, spec.count, spec.dtype, spec.op); break;
    case MATEX_COLL_BROADCAST: comm_.broadcast(recv, spec.count, spec.dtype, spec.root); break;
    case MATEX_COLL_ALLGATHER: comm_.allgather(matex_send, recv, spec.count, spec.dtype); break;
    case MATEX_COLL_REDUCE_SCATTER: comm_.reduce_scatter(matex_send, recv, spec.count, spec.dtype, spec.op); break;
    case MATEX_COLL_REDUCE: throw not_timed();
  }
  if (device_ != nullptr) device_->synchronize();  // the results are complete when the time is taken
  return MPI_Wtime() - start;
}

// The MPI baseline on device buffers, inside the timed region: a CUDA-aware
// MPI works on them; otherwise, as Horovod does, the inputs go to pageable
// host buffers, MPI works there, and the outputs go back.
void CollectiveRunner::device_mpi_call(const CaseSpec& spec) {
  const bool avg = spec.op == MATEX_AVG;
  if (device_->mpi_takes_device_buffers()) {
    const void* send = spec.in_place ? nullptr : device_->send();
    // MpiBaseline divides avg on the host: sum here, then scale on the device.
    mpi_->run(spec.coll, send, device_->recv(), spec.count, spec.dtype, avg ? MATEX_SUM : spec.op, spec.root);
    if (avg) device_->scale(spec.dtype, device_->recv(), spec.count, 1.0 / world_size_);
    device_->synchronize();
    return;
  }
  const CallExtent e = extent_of(spec, world_size_);
  const size_t es = matex_dtype_size(spec.dtype);
  const bool broadcast_root = spec.coll == MATEX_COLL_BROADCAST && rank_ == spec.root;
  unsigned char* host_send = mpi_staging_send_->bytes();
  unsigned char* host_recv = mpi_staging_recv_->bytes();
  if (!spec.in_place) {
    device_->to_host(host_send, device_->send(), e.send_bytes);
  } else if (spec.coll == MATEX_COLL_ALLGATHER) {  // the input is this rank's block
    const size_t offset = static_cast<size_t>(rank_) * spec.count * es;
    device_->to_host(host_recv + offset, device_->recv() + offset, spec.count * es);
  } else if (spec.coll != MATEX_COLL_BROADCAST || broadcast_root) {
    device_->to_host(host_recv, device_->recv(), e.recv_bytes);
  }
  mpi_->run(spec.coll, spec.in_place ? nullptr : host_send, host_recv, spec.count, spec.dtype, spec.op, spec.root);
  if (!broadcast_root) device_->to_device(device_->recv(), host_recv, e.output_bytes);
}

uint64_t CollectiveRunner::count_wrong(const CaseSpec& spec, const ReferencePatterns& patterns, uint64_t seq) const {
  const size_t es = matex_dtype_size(spec.dtype);
  const size_t n = spec.count;
  switch (spec.coll) {
    case MATEX_COLL_ALLREDUCE: return patterns.count_wrong_reduced(seq, 0, n, recv_.data());
    case MATEX_COLL_REDUCE_SCATTER: return patterns.count_wrong_reduced(seq, rank_ * n, n, recv_.data());
    case MATEX_COLL_BROADCAST: return patterns.count_wrong_input(spec.root, seq, 0, n, recv_.data());
    case MATEX_COLL_ALLGATHER: {
      uint64_t wrong = 0;
      for (int source = 0; source < world_size_; ++source)
        wrong += patterns.count_wrong_input(source, seq, 0, n, recv_.bytes() + source * n * es);
      return wrong;
    }
    case MATEX_COLL_REDUCE: throw not_timed();
  }
  return 0;
}

}  // namespace matexbench

