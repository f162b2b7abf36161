// device_path_cuda.cc - the CUDA device path (see device_path.h): picks the
// device algorithm of each collective, and owns the GPU resources the
// algorithms use.
//
// Choice (MATEX_CUDA_ALGO, identical on every rank):
//   auto      nccl_hier when the node's NCCL communicator works on every rank
//             (it does not when two ranks of a node share a GPU), else staged;
//             a reduction NCCL lacks (int16, uint16, bitwise ops) is staged;
//   nccl_hier the same, but an error when NCCL cannot be used, and
//             MATEX_ERR_UNSUPPORTED for a reduction NCCL lacks;
//   staged    the host algorithm (MATEX_ALLREDUCE_ALGO, matex_set_algorithm)
//             on pinned copies, chunk by chunk.
// Allgather always stages; reduce_scatter uses NCCL on a single node.
#include <mpi.h>

#include <algorithm>
#include <string>

#include "algorithms/gpu_algorithms.h"
#include "comm/communicator.h"
#include "comm/device_path.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/logging.h"
#include "core/mpi_handles.h"
#include "gpu/cuda_aware_mpi.h"
#include "gpu/cuda_check.h"
#include "gpu/cuda_resources.h"
#include "gpu/device_kernels.h"
#include "gpu/device_pointer.h"
#include "gpu/nccl_node_comm.h"

namespace matexcomm {

namespace {

class CudaDevicePath final : public DevicePath {
 public:
  CudaDevicePath(const Config& config, const CollectiveContext& ctx)
      : ctx_(ctx),
        choice_(config.get_string("MATEX_CUDA_ALGO")),
        cuda_aware_setting_(config.get_string("MATEX_CUDA_AWARE_MPI")),
        chunk_bytes_(config.get_bytes("MATEX_CUDA_STAGING_CHUNK_BYTES")),
        slots_(static_cast<int>(config.get_int("MATEX_CUDA_STAGING_SLOTS"))) {
    gpu::probe_devices();  // here, not in the first collective (gpu/device_pointer.h)
  }

  bool is_device(const void* pointer) const override {
    return gpu::memory_kind(pointer) == gpu::MemoryKind::kDevice;
  }
  void set_stream(void* stream) override { user_stream_ = static_cast<cudaStream_t>(stream); }
  void* stream() const override { return user_stream_; }
  void set_blocking(bool blocking) override { blocking_ = blocking; }

  const char* allreduce(Communicator& host, const void* send, void* recv, size_t count, matex_dtype_t dtype,
                        matex_op_t op) override {
    require_same_kind(send, "sendbuf", recv, "recvbuf");
    prepare(recv);
    const char* name = run_allreduce(host, send, recv, count, dtype, op);
    finish();
    return name;
  }

  const char* broadcast(Communicator& host, void* buffer, size_t count, matex_dtype_t dtype, int root) override {
    prepare(buffer);
    const char* name = "staged";
    if (use_nccl()) {
      gpu_broadcast_nccl_hier(ctx_, gpu_, buffer, count, dtype, root);
      name = "nccl_hier";
    } else {
      gpu_broadcast_staged(gpu_, buffer, count, dtype_size(dtype), root, ctx_.layout->world_rank,
                           host_collectives(host, dtype, MATEX_SUM));
    }
    finish();
    return name;
  }

  const char* allgatherv(Communicator& host, const void* send, size_t sendcount, void* recv,
                         const std::vector<size_t>& counts, const std::vector<size_t>& displs,
                         matex_dtype_t dtype) override {
    prepare(is_device(recv) ? static_cast<const void*>(recv) : send);
    const size_t element = dtype_size(dtype);
    size_t extent = 0;
    for (size_t r = 0; r < counts.size(); ++r) extent = std::max(extent, displs[r] + counts[r]);
    StagedBuffer buffers[2] = {{send, sendcount * element, true, false}, {recv, extent * element, true, true}};
    const size_t n = send == nullptr ? 1 : 2;  // in place: only recv
    StagedBuffer* list = send == nullptr ? buffers + 1 : buffers;
    gpu_run_staged(gpu_, list, n, [&](void* const* copies) {
      const void* host_send = send == nullptr ? nullptr : copies[0];
      void* host_recv = copies[n - 1];
      // In place the rank's own block already sits in the recv copy.
      if (host_send == nullptr) host_send = static_cast<char*>(host_recv) + displs[ctx_.layout->world_rank] * element;
      host.allgatherv(host_send, sendcount, host_recv, counts.data(), displs.data(), dtype);
    });
    finish();
    return "staged";
  }

  const char* reduce_scatter(Communicator& host, const void* send, void* recv, size_t recvcount, matex_dtype_t dtype,
                             matex_op_t op) override {
    if (send != nullptr) require_same_kind(send, "sendbuf", recv, "recvbuf");
    prepare(recv);
    const size_t element = dtype_size(dtype);
    const size_t p = static_cast<size_t>(ctx_.layout->world_size);
    if (nccl_reduces(dtype, op) && ctx_.layout->node_count == 1) {
      // NCCL's in place: the output is block `rank` of the input buffer.
      if (send == nullptr) {
        char* whole = static_cast<char*>(recv);
        gpu_.nccl->reduce_scatter(whole, whole + ctx_.layout->world_rank * recvcount * element, recvcount, dtype, op,
                                  gpu_.stream);
        if (ctx_.layout->world_rank > 0) {  // blocks do not overlap
          gpu::check_cuda(cudaMemcpyAsync(whole, whole + ctx_.layout->world_rank * recvcount * element,
                                          recvcount * element, cudaMemcpyDeviceToDevice, gpu_.stream),
                          "cudaMemcpyAsync of the reduce_scatter block");
        }
      } else {
        gpu_.nccl->reduce_scatter(send, recv, recvcount, dtype, op, gpu_.stream);
      }
      gpu::launch_scale(dtype, recv, recvcount, op == MATEX_AVG ? 1.0 / p : 1.0, gpu_.stream);
      finish();
      return "nccl";
    }
    StagedBuffer buffers[2] = {{send, recvcount * p * element, true, false}, {recv, recvcount * element, false, true}};
    if (send == nullptr) buffers[1].bytes = recvcount * p * element;  // in place: recv holds the whole input
    StagedBuffer* list = send == nullptr ? buffers + 1 : buffers;
    const size_t n = send == nullptr ? 1 : 2;
    gpu_run_staged(gpu_, list, n, [&](void* const* copies) {
      host.reduce_scatter(send == nullptr ? MATEX_IN_PLACE : copies[0], copies[n - 1], recvcount, dtype, op);
    });
    finish();
    return "staged";
  }

  const char* allreduce_fused(Communicator& host, const std::vector<ScaledPiece>& pieces, matex_dtype_t dtype,
                              matex_op_t op) override {
    prepare(pieces.empty() ? nullptr : pieces[0].recv);
    const size_t element = dtype_size(dtype);
    size_t total = 0;
    for (const ScaledPiece& piece : pieces) total += piece.count;
    char* fused = fusion_.reserve(total * element);
    std::vector<gpu::CopyItem> copies;
    std::vector<gpu::ScaleItem> scales;
    size_t offset = 0;
    for (const ScaledPiece& piece : pieces) {  // pack, scaling on the way in
      copies.push_back({piece.send, fused + offset, piece.count * element});
      scales.push_back({fused + offset, piece.count, piece.prescale});
      offset += piece.count * element;
    }
    gpu::launch_batched_copy(copies.data(), copies.size(), gpu_.stream);
    if (dtype_is_floating(dtype)) gpu::launch_batched_scale(dtype, scales.data(), scales.size(), gpu_.stream);
    const char* name = run_allreduce(host, fused, fused, total, dtype, op);
    copies.clear();
    offset = 0;
    for (size_t i = 0; i < pieces.size(); ++i) {  // unpack, scaling on the way out
      scales[i].factor = pieces[i].postscale;
      copies.push_back({fused + offset, pieces[i].recv, pieces[i].count * element});
      offset += pieces[i].count * element;
    }
    if (dtype_is_floating(dtype)) gpu::launch_batched_scale(dtype, scales.data(), scales.size(), gpu_.stream);
    gpu::launch_batched_copy(copies.data(), copies.size(), gpu_.stream);
    gpu::check_cuda(cudaStreamSynchronize(gpu_.stream), "cudaStreamSynchronize after a fused allreduce");
    return name;
  }

 private:
  void require_same_kind(const void* a, const char* a_name, const void* b, const char* b_name) const {
    if (is_device(a) == is_device(b)) return;
    MATEX_RAISE(MATEX_ERR_INVALID_ARG, std::string(a_name) + " is " + (is_device(a) ? "device" : "host") +
                                           " memory but " + b_name + " is " + (is_device(b) ? "device" : "host") +
                                           " memory; pass both in the same kind of memory");
  }

  bool use_nccl() const { return gpu_.nccl != nullptr; }
  // NCCL reduces (dtype, op) here. Under auto, a pair NCCL lacks (int16,
  // uint16, the bitwise ops) goes through the staged path instead; forced
  // nccl_hier refuses it with MATEX_ERR_UNSUPPORTED. Both depend only on the
  // arguments and the node's NCCL, so every rank takes the same path.
  bool nccl_reduces(matex_dtype_t dtype, matex_op_t op) const {
    return use_nccl() && (choice_ == "nccl_hier" || gpu::nccl_reduction_problem(dtype, op).empty());
  }

  const char* run_allreduce(Communicator& host, const void* send, void* recv, size_t count, matex_dtype_t dtype,
                            matex_op_t op) {
    if (nccl_reduces(dtype, op)) {
      gpu_allreduce_nccl_hier(ctx_, gpu_, send, recv, count, dtype, op);
      return "nccl_hier";
    }
    gpu_allreduce_staged(gpu_, send, recv, count, dtype_size(dtype), host_collectives(host, dtype, op));
    return "staged";
  }

  // The first device collective sets up NCCL and the staging buffers; every
  // rank must be in it (collective over the world).
  void prepare(const void* device_buffer) {
    gpu::select_device_of(device_buffer);
    if (!ready_) set_up();
    if (blocking_ && !own_stream_) own_stream_ = std::make_unique<gpu::CudaStream>();
    gpu_.stream = blocking_ ? own_stream_->get() : user_stream_;
  }

  void finish() {
    if (blocking_) gpu::check_cuda(cudaStreamSynchronize(gpu_.stream), "cudaStreamSynchronize after a collective");
  }

  void set_up();

  HostCollectives host_collectives(Communicator& host, matex_dtype_t dtype, matex_op_t op) const {
    HostCollectives calls;
    calls.allreduce_in_place = [&host, dtype, op](void* buffer, size_t count) {
      host.allreduce(buffer, buffer, count, dtype, op);
    };
    calls.broadcast = [&host, dtype](void* buffer, size_t count, int root) {
      host.broadcast(buffer, count, dtype, root);
    };
    return calls;
  }

  const CollectiveContext& ctx_;
  std::string choice_;
  std::string cuda_aware_setting_;
  size_t chunk_bytes_;
  int slots_;
  bool ready_ = false;
  bool blocking_ = false;
  cudaStream_t user_stream_ = nullptr;
  std::unique_ptr<gpu::CudaStream> own_stream_;
  std::unique_ptr<gpu::NcclNodeComm> nccl_;
  std::unique_ptr<gpu::HostStagingPipeline> staging_;
  gpu::DeviceBuffer fusion_;
  gpu::DeviceBuffer ring_scratch_;
  gpu::PinnedBuffer whole_copies_[2];
  GpuContext gpu_;
};

void CudaDevicePath::set_up() {
  const topo::Layout& layout = *ctx_.layout;
  std::string how;
  // [0] CUDA-aware MPI, [1] NCCL works on my node, [2] staging buffers allocated
  int mine[3] = {gpu::mpi_accepts_device_memory(cuda_aware_setting_, &how) ? 1 : 0, 0, 0};
  std::string nccl_problem;
  std::string staging_problem;
  if (choice_ != "staged") {
    try {
      nccl_ = std::make_unique<gpu::NcclNodeComm>(ctx_.node, layout.local_rank, layout.local_size);
      mine[1] = 1;
    } catch (const Error& error) {
      nccl_problem = error.message();
    }
  }
  try {
    staging_ = std::make_unique<gpu::HostStagingPipeline>(chunk_bytes_, slots_);
    mine[2] = 1;
  } catch (const Error& error) {
    staging_problem = error.message();
  }
  int all[3] = {0, 0, 0};
  check_mpi(MPI_Allreduce(mine, all, 3, MPI_INT, MPI_MIN, ctx_.world), "MPI_Allreduce of GPU capabilities");
  if (all[2] == 0) {  // every rank stops here alike
    MATEX_RAISE(MATEX_ERR_DEVICE, "the pinned staging buffers could not be allocated " +
                                      (staging_problem.empty() ? std::string("on another rank") : ": " + staging_problem));
  }
  gpu_.cuda_aware_mpi = all[0] == 1;
  MATEX_LOG(LogLevel::kInfo, std::string("CUDA-aware MPI: ") + (gpu_.cuda_aware_mpi ? "yes" : "no") + " (" + how +
                                 (mine[0] != all[0] ? "; another rank's MPI is not" : "") + ")");
  if (all[1] == 0) {
    nccl_.reset();
    if (choice_ == "nccl_hier") {
      MATEX_RAISE(MATEX_ERR_DEVICE, "MATEX_CUDA_ALGO=nccl_hier but NCCL cannot be used" +
                                        (nccl_problem.empty() ? std::string(" on another rank") : ": " + nccl_problem));
    }
    // Said once per node, by the ranks that found the reason.
    if (choice_ != "staged" && !nccl_problem.empty() && layout.local_rank == 0) {
      MATEX_LOG(LogLevel::kWarn, "NCCL is not usable (" + nccl_problem + "); GPU buffers are staged through host memory");
    }
  }
  gpu_.nccl = nccl_.get();
  gpu_.staging = staging_.get();
  gpu_.whole_copies = whole_copies_;
  gpu_.scratch = &ring_scratch_;
  ready_ = true;
}

}  // namespace

std::unique_ptr<DevicePath> DevicePath::create(const Config& config, const CollectiveContext& ctx) {
  return std::make_unique<CudaDevicePath>(config, ctx);
}

}  // namespace matexcomm
