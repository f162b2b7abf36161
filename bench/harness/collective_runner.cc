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
}  // namespace

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
          device_->to_host(recv_.data(), device_->recv(), descriptor_of(spec.coll).extent(spec, world_size_).output_bytes);
        wrong[c] = descriptor_of(spec.coll).count_wrong(host_call(spec), patterns, seq);
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
  descriptor_of(spec.coll).prepare(host_call(spec), patterns, seq, poison);
}

// Copies what prepare() wrote to the device buffers: the inputs, and recv
// where it holds inputs or poison.
void CollectiveRunner::upload(const CaseSpec& spec, bool poison) {
  const CollectiveDescriptor& collective = descriptor_of(spec.coll);
  const CallExtent e = collective.extent(spec, world_size_);
  device_->to_device(device_->send(), send_.data(), e.send_bytes);
  if (poison || spec.in_place || collective.recv_always_uploaded)
    device_->to_device(device_->recv(), recv_.data(), e.recv_bytes);
}

double CollectiveRunner::timed_call(const CaseSpec& spec, bool ours) {
  const void* send = spec.in_place ? nullptr : device_ != nullptr ? device_->send() : send_.data();
  void* recv = device_ != nullptr ? device_->recv() : recv_.data();
  MPI_Barrier(MPI_COMM_WORLD);
  const double start = MPI_Wtime();
  const CollectiveDescriptor& collective = descriptor_of(spec.coll);
  if (!ours) {
    if (device_ != nullptr) device_mpi_call(spec);
    else collective.run_mpi(*mpi_, spec, send, recv);
    return MPI_Wtime() - start;
  }
  collective.run_ours(comm_, spec, send != nullptr ? send : MATEX_IN_PLACE, recv);
  if (device_ != nullptr) device_->synchronize();  // the results are complete when the time is taken
  return MPI_Wtime() - start;
}

// The MPI baseline on device buffers, inside the timed region: a CUDA-aware
// MPI works on them; otherwise, as Horovod does, the inputs go to pageable
// host buffers, MPI works there, and the outputs go back.
void CollectiveRunner::device_mpi_call(const CaseSpec& spec) {
  const CollectiveDescriptor& collective = descriptor_of(spec.coll);
  if (device_->mpi_takes_device_buffers()) {
    const void* send = spec.in_place ? nullptr : device_->send();
    // The baseline divides avg on the host: sum here, then scale on the device.
    CaseSpec summed = spec;
    if (spec.op == MATEX_AVG) summed.op = MATEX_SUM;
    collective.run_mpi(*mpi_, summed, send, device_->recv());
    if (spec.op == MATEX_AVG) device_->scale(spec.dtype, device_->recv(), spec.count, 1.0 / world_size_);
    device_->synchronize();
    return;
  }
  const CallExtent e = collective.extent(spec, world_size_);
  unsigned char* host_send = mpi_staging_send_->bytes();
  unsigned char* host_recv = mpi_staging_recv_->bytes();
  if (!spec.in_place) {
    device_->to_host(host_send, device_->send(), e.send_bytes);
  } else {
    const ByteSpan input = collective.input_in_recv(spec, rank_, world_size_);
    if (input.bytes > 0) device_->to_host(host_recv + input.offset, device_->recv() + input.offset, input.bytes);
  }
  collective.run_mpi(*mpi_, spec, spec.in_place ? nullptr : host_send, host_recv);
  if (collective.writes_output(spec, rank_)) device_->to_device(device_->recv(), host_recv, e.output_bytes);
}

}  // namespace matexbench

