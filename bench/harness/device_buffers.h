// device_buffers.h - what matex-bench --mem cuda needs from CUDA, behind an
// interface free of CUDA headers so that the collective runner compiles the
// same with and without CUDA: choosing this rank's GPU, the device send/recv
// buffers, blocking copies between them and the host, the stream that the
// collectives run on, and whether MPI takes device pointers.
//
// device_buffers_cuda.cc implements it (CUDA builds, MATEX_BENCH_CUDA);
// device_buffers_none.cc refuses (builds without CUDA).
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "matexcomm/matexcomm.h"

namespace matexbench {

class DeviceBuffers {
 public:
  virtual ~DeviceBuffers() = default;

  // The device buffers, each of the size given at creation.
  virtual char* send() const = 0;
  virtual char* recv() const = 0;

  // Copies on the collectives' stream, complete when they return.
  virtual void to_device(void* device, const void* host, size_t bytes) = 0;
  virtual void to_host(void* host, const void* device, size_t bytes) = 0;
  // Returns once everything queued on the collectives' stream has finished.
  virtual void synchronize() = 0;
  // data[i] *= factor on the device (the MPI baseline's avg on device buffers).
  virtual void scale(matex_dtype_t dtype, void* data, size_t count, double factor) = 0;

  // Whether the MPI baseline passes the device buffers to MPI (CUDA-aware MPI,
  // on every rank) or stages them through pageable host memory.
  virtual bool mpi_takes_device_buffers() const = 0;
  // Preamble lines (with the leading "# "): GPU, stream and MPI baseline.
  virtual std::vector<std::string> describe(bool compare_mpi) const = 0;
};

// Before the communicator exists (and before any other CUDA call): every rank
// checks locally for a usable GPU, all ranks agree (MPI_Allreduce on
// MPI_COMM_WORLD, which every rank reaches), then each sets its device to
// (rank on this machine) % (GPUs). Returns "" or this rank's message:
// "SKIPPED: no GPU (<reason>)" where this rank has none, another message where
// only other ranks have none.
std::string select_rank_device();

// Device send and recv buffers of `bytes` each, and a stream of their own set
// on `comm` with matex_comm_set_cuda_stream. Collective over MPI_COMM_WORLD (the ranks agree on CUDA-aware MPI).
// Throws std::runtime_error (or the library's error) on a CUDA failure.
std::unique_ptr<DeviceBuffers> open_device_buffers(matex_comm_t comm, size_t bytes);

}  // namespace matexbench
