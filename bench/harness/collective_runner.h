// collective_runner.h - times one case (collective, dtype, op, size,
// placement) of ours and, with --compare mpi, of plain MPI on the same
// buffers, and checks the last call of each element by element.
//
// Every call gets fresh inputs (they depend on a call number), written
// outside the timed region, then all ranks meet in a barrier and the call
// alone is timed. With --compare mpi ours and MPI alternate call by call.
// With --compare all the contenders are auto, each forced algorithm and MPI;
// every iteration runs each of them once, starting one further along the list
// than the iteration before, and the algorithm is set outside the timing.
// A forced algorithm that does not run as itself here (matex_last_algorithm
// names another after its first call) drops out. Every contender's last
// call is checked.
// Time = mean per call on each rank, then the maximum over ranks.
// What differs between collectives comes from their descriptors
// (collective_descriptor.h): the runner itself never asks which one it runs.
//
// With device buffers (--mem cuda) the host buffers still receive the inputs
// and poison; they are copied to the device before the barrier, every timed
// call ends with a stream synchronize, and the checked call's output is
// copied back before it is checked.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "aligned_buffer.h"
#include "collective_descriptor.h"
#include "device_buffers.h"
#include "matexcomm/matexcomm.hpp"
#include "mpi_baseline.h"
#include "reference_patterns.h"

namespace matexbench {

struct Measurement {
  double time_us = 0.0;      // ours, mean per call, max over ranks
  double mpi_time_us = -1.0; // < 0: not measured
  bool checked = false;
  uint64_t wrong = 0;        // ours, summed over ranks
  uint64_t mpi_wrong = 0;
  std::string algorithm;     // matex_last_algorithm after our last call
  // --compare all: per forced algorithm (CollectiveRunner::forced_algorithms
  // order), its time as time_us; < 0 where it did not run as itself.
  std::vector<double> forced_time_us;
};

class CollectiveRunner {
 public:
  // Buffers must hold the largest row's bytes; `mpi` may be null. With
  // `device` (same size), the collectives run on its buffers.
  CollectiveRunner(matex::Communicator& comm, const MpiBaseline* mpi, AlignedBuffer& send, AlignedBuffer& recv,
                   int iterations, int warmup_iterations, bool check, bool scale_iterations = false,
                   DeviceBuffers* device = nullptr, std::vector<std::string> forced_algorithms = {});
  // Timed calls for a per-rank buffer of `bytes`: iterations, or with
  // scale_iterations up to 100 times more below 1 MiB.
  int timed_iterations(size_t bytes) const;

  Measurement run(const CaseSpec& spec, const ReferencePatterns& patterns);
  const std::vector<std::string>& forced_algorithms() const { return forced_; }

 private:
  void prepare(const CaseSpec& spec, const ReferencePatterns& patterns, uint64_t seq, bool poison);
  void upload(const CaseSpec& spec, bool poison);
  double timed_call(const CaseSpec& spec, bool ours);
  void set_algorithm(matex_collective_t coll, const std::string& name);
  void device_mpi_call(const CaseSpec& spec);
  RankCall host_call(const CaseSpec& spec) const { return {spec, rank_, world_size_, send_.bytes(), recv_.bytes()}; }

  matex::Communicator& comm_;
  const MpiBaseline* mpi_;
  AlignedBuffer& send_;
  AlignedBuffer& recv_;
  int iterations_;
  int warmup_iterations_;
  bool scale_iterations_;
  bool check_;
  int rank_;
  int world_size_;
  uint64_t next_seq_ = 0;  // call number: inputs differ from call to call
  DeviceBuffers* device_;  // null: host buffers
  std::vector<std::string> forced_;  // --compare all: the algorithms raced against auto
  // Pageable host buffers of the MPI baseline on device buffers when MPI is
  // not CUDA-aware.
  std::unique_ptr<AlignedBuffer> mpi_staging_send_;
  std::unique_ptr<AlignedBuffer> mpi_staging_recv_;
};

}  // namespace matexbench
