// device_buffers_cuda.cc - device_buffers.h with CUDA: the GPU of each rank,
// cudaMalloc'd send/recv buffers, the collectives' stream and the question
// whether MPI takes device pointers (Open MPI's MPIX_Query_cuda_support).
#include <cuda_runtime.h>
#include <mpi.h>

#include <stdexcept>

#include "device_buffers.h"
#include "gpu/cuda_aware_mpi.h"
#include "gpu/cuda_check.h"
#include "gpu/cuda_resources.h"
#include "gpu/device_kernels.h"
#include "gpu/device_pointer.h"

namespace matexbench {
namespace {

using matexcomm::gpu::check_cuda;

int rank_on_this_machine() {
  int world_rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  MPI_Comm machine = MPI_COMM_NULL;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, world_rank, MPI_INFO_NULL, &machine);
  int local_rank = 0;
  MPI_Comm_rank(machine, &local_rank);
  MPI_Comm_free(&machine);
  return local_rank;
}

class CudaDeviceBuffers final : public DeviceBuffers {
 public:
  CudaDeviceBuffers(matex_comm_t comm, size_t bytes) : comm_(comm), send_(bytes), recv_(bytes) {
    check_cuda(cudaGetDevice(&device_), "cudaGetDevice");
    check_cuda(cudaGetDeviceCount(&device_count_), "cudaGetDeviceCount");
    cudaDeviceProp properties{};
    check_cuda(cudaGetDeviceProperties(&properties, device_), "cudaGetDeviceProperties");
    device_name_ = properties.name;
    if (matex_comm_set_cuda_stream(comm, stream_.get()) != MATEX_SUCCESS)
      throw std::runtime_error(std::string("--mem cuda: matex_comm_set_cuda_stream: ") + matex_last_error());
    // Zero once, so that no byte of a device buffer is ever uninitialized; on
    // stream_, which does not wait for the legacy default stream.
    check_cuda(cudaMemsetAsync(send_.data(), 0, bytes, stream_.get()), "cudaMemsetAsync");
    check_cuda(cudaMemsetAsync(recv_.data(), 0, bytes, stream_.get()), "cudaMemsetAsync");
    synchronize();
    // The library's own question, without MATEX_CUDA_AWARE_MPI: the baseline is plain MPI.
    const int aware_here = matexcomm::gpu::mpi_accepts_device_memory("auto", &mpi_how_) ? 1 : 0;
    int aware_everywhere = aware_here;
    MPI_Allreduce(MPI_IN_PLACE, &aware_everywhere, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    mpi_takes_device_buffers_ = aware_everywhere == 1;
    if (aware_here == 1 && !mpi_takes_device_buffers_) mpi_how_ += ", but not on every rank";
  }

  // The communicator outlives this object: it must not keep a destroyed stream.
  ~CudaDeviceBuffers() override {
    (void)cudaStreamSynchronize(stream_.get());
    (void)matex_comm_set_cuda_stream(comm_, nullptr);
  }
  CudaDeviceBuffers(const CudaDeviceBuffers&) = delete;
  CudaDeviceBuffers& operator=(const CudaDeviceBuffers&) = delete;

  char* send() const override { return send_.data(); }
  char* recv() const override { return recv_.data(); }

  void to_device(void* device, const void* host, size_t bytes) override {
    if (bytes == 0) return;
    check_cuda(cudaMemcpyAsync(device, host, bytes, cudaMemcpyHostToDevice, stream_.get()), "cudaMemcpyAsync H2D");
    synchronize();
  }
  void to_host(void* host, const void* device, size_t bytes) override {
    if (bytes == 0) return;
    check_cuda(cudaMemcpyAsync(host, device, bytes, cudaMemcpyDeviceToHost, stream_.get()), "cudaMemcpyAsync D2H");
    synchronize();
  }
  void synchronize() override { check_cuda(cudaStreamSynchronize(stream_.get()), "cudaStreamSynchronize"); }
  void scale(matex_dtype_t dtype, void* data, size_t count, double factor) override {
    matexcomm::gpu::launch_scale(dtype, data, count, factor, stream_.get());
  }

  bool mpi_takes_device_buffers() const override { return mpi_takes_device_buffers_; }

  std::vector<std::string> describe(bool compare_mpi) const override {
    std::vector<std::string> lines;
    lines.push_back("# memory: cuda (cudaMalloc'd send/recv buffers; rank 0 on GPU " + std::to_string(device_) +
                    " of " + std::to_string(device_count_) + ", " + device_name_ +
                    "; each rank uses GPU (its rank on the machine) % (GPUs)); inputs written and results checked "
                    "on the host, copied outside the timed region");
    lines.push_back("# cuda stream: a non-blocking stream set with matex_comm_set_cuda_stream; every timed call "
                    "ends with cudaStreamSynchronize on it");
    if (compare_mpi && mpi_takes_device_buffers_) {
      lines.push_back("# mpi baseline: CUDA-aware MPI on the device buffers (" + mpi_how_ +
                      " on rank 0, agreed by every rank); avg = sum, then a scale kernel");
    } else if (compare_mpi) {
      lines.push_back("# mpi baseline: staged through pageable host memory (MPI is not CUDA-aware: " + mpi_how_ +
                      " on rank 0): cudaMemcpy D2H, MPI, cudaMemcpy H2D, all inside the timed call");
    }
    return lines;
  }

 private:
  matex_comm_t comm_;
  matexcomm::gpu::DeviceBuffer send_;
  matexcomm::gpu::DeviceBuffer recv_;
  matexcomm::gpu::CudaStream stream_;  // the collectives' stream
  int device_ = 0;
  int device_count_ = 0;
  std::string device_name_;
  bool mpi_takes_device_buffers_ = false;
  std::string mpi_how_;
};

}  // namespace

std::string select_rank_device() {
  int world_rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  std::string why_none;
  const int devices = matexcomm::gpu::usable_device_count(&why_none);
  const int local_rank = rank_on_this_machine();  // collective: before any early return
  std::string failure;
  if (devices <= 0) {
    failure = "SKIPPED: no GPU (" + why_none + "; rank " + std::to_string(world_rank) + ", --mem cuda)";
  } else {
    const int device = local_rank % devices;
    const cudaError_t rc = cudaSetDevice(device);
    if (rc != cudaSuccess) {
      (void)cudaGetLastError();
      failure = "matex-bench: --mem cuda: rank " + std::to_string(world_rank) + ": cudaSetDevice(" +
                std::to_string(device) + "): " + cudaGetErrorString(rc);
    }
  }
  int failed = failure.empty() ? 0 : 1;
  MPI_Allreduce(MPI_IN_PLACE, &failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (failure.empty() && failed != 0)
    failure = "matex-bench: --mem cuda: rank " + std::to_string(world_rank) + " has a GPU, but another rank has none";
  return failure;
}

std::unique_ptr<DeviceBuffers> open_device_buffers(matex_comm_t comm, size_t bytes) {
  return std::make_unique<CudaDeviceBuffers>(comm, bytes);
}

}  // namespace matexbench
