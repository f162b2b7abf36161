// device_path.h - what a communicator does with buffers in GPU memory.
//
// Built with CUDA, DevicePath::create returns the CUDA path: it detects device
// pointers, and on the first collective that uses them (which every rank must
// call with device memory) creates the node's NCCL communicator and the
// pinned staging buffers, and agrees across ranks on NCCL and CUDA-aware MPI.
// Built without CUDA it returns null and every pointer is host memory.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "algorithms/collective_context.h"
#include "core/config.h"
#include "matexcomm/matexcomm.h"

namespace matexcomm {

class Communicator;

// A tensor of the engine's fused allreduce, with its own scaling.
struct ScaledPiece {
  const void* send = nullptr;
  void* recv = nullptr;
  size_t count = 0;
  double prescale = 1.0;
  double postscale = 1.0;
};

class DevicePath {
 public:
  virtual ~DevicePath() = default;
  // Null in builds without CUDA.
  static std::unique_ptr<DevicePath> create(const Config& config, const CollectiveContext& ctx);

  virtual bool is_device(const void* pointer) const = 0;
  // The cudaStream_t the collectives run on (null: the legacy default stream).
  virtual void set_stream(void* stream) = 0;
  virtual void* stream() const = 0;
  // true: every collective waits for its device work before returning (the
  // engine's completions mean "the data is there"), on a stream of its own.
  virtual void set_blocking(bool blocking) = 0;

  // Each returns the name of the algorithm it ran. `host` runs the host
  // collectives of the staged paths.
  virtual const char* allreduce(Communicator& host, const void* send, void* recv, size_t count, matex_dtype_t dtype,
                                matex_op_t op) = 0;
  virtual const char* broadcast(Communicator& host, void* buffer, size_t count, matex_dtype_t dtype, int root) = 0;
  virtual const char* allgatherv(Communicator& host, const void* send, size_t sendcount, void* recv,
                                 const std::vector<size_t>& counts, const std::vector<size_t>& displs,
                                 matex_dtype_t dtype) = 0;
  virtual const char* reduce_scatter(Communicator& host, const void* send, void* recv, size_t recvcount,
                                     matex_dtype_t dtype, matex_op_t op) = 0;
  // The engine's fused allreduce of device tensors: packed into a fusion
  // buffer in one launch (scaled on the way in), reduced, scaled and unpacked
  // in one launch. Complete (stream synchronized) on return.
  virtual const char* allreduce_fused(Communicator& host, const std::vector<ScaledPiece>& pieces,
                                      matex_dtype_t dtype, matex_op_t op) = 0;
};

}  // namespace matexcomm
