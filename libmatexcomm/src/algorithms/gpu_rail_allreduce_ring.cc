// gpu_rail_allreduce_ring.cc - allreduce of a device buffer across a rail (one
// rank per node) through a CUDA-aware MPI that only moves bytes: a ring of
// MPI_Sendrecv calls on device memory, the reductions done on the GPU by
// launch_reduce.
//
// Why: a CUDA-aware MPI_Allreduce on device memory reduces on the host (Open
// MPI copies the data down, reduces on one core and copies it back), and MPI's
// float16/bfloat16 ops are ours, host code that cannot read device memory.
// Here MPI only carries bytes between GPUs and every reduction runs on one.
// Steps (N = rail size, r = my rail rank, blocks b = split_range(count, N, b)):
//   reduce-scatter, for s = 0 .. N-2: send block (r - s) mod N to r + 1,
//     receive block (r - s - 1) mod N from r - 1 into scratch, reduce it into
//     mine (the stream is synchronized before the block is sent on);
//   then rank r holds block (r + 1) mod N of the result;
//   allgather, for s = 0 .. N-2: send block (r + 1 - s) mod N, receive block
//     (r - s) mod N straight into place.
// Bytes per rank: 2 (N-1)/N n over the network, (N-1)/N n reduced on the GPU.
// Cost: 2(N-1) alpha + 2 (N-1)/N n beta + (N-1)/N n gamma_gpu + (N-1) stream syncs.
// Preconditions: MPI accepts device pointers; data is device memory of count
//   elements, the same count on every rank of the rail; scratch holds a block.
#include <algorithm>
#include <climits>

#include "algorithms/gpu_algorithms.h"
#include "core/dtype.h"
#include "core/mpi_handles.h"
#include "gpu/cuda_check.h"
#include "gpu/device_kernels.h"

namespace matexcomm {

namespace {

constexpr size_t kPiece = size_t{1} << 30;

// MPI_Sendrecv of byte ranges in `pieces` calls of at most 1 GiB each.
// Neighbours' calls must match one for one, so every rank makes the same
// number of calls (from the largest block), empty ones included.
void exchange(MPI_Comm rail, size_t pieces, const char* send, size_t send_bytes, int to, char* recv, size_t recv_bytes,
              int from) {
  for (size_t piece = 0; piece < pieces; ++piece) {
    const size_t done = piece * kPiece;
    const int out = static_cast<int>(send_bytes > done ? std::min(kPiece, send_bytes - done) : 0);
    const int in = static_cast<int>(recv_bytes > done ? std::min(kPiece, recv_bytes - done) : 0);
    check_mpi(MPI_Sendrecv(send + done, out, MPI_BYTE, to, 0, recv + done, in, MPI_BYTE, from, 0, rail,
                           MPI_STATUS_IGNORE),
              "MPI_Sendrecv of device memory along the rail");
  }
}

}  // namespace

void gpu_rail_allreduce_ring(const GpuContext& gpu, MPI_Comm rail, char* data, size_t count, matex_dtype_t dtype,
                             matex_op_t op) {
  int n = 1, r = 0;
  check_mpi(MPI_Comm_size(rail, &n), "MPI_Comm_size of the rail");
  check_mpi(MPI_Comm_rank(rail, &r), "MPI_Comm_rank of the rail");
  if (n == 1 || count == 0) return;
  const size_t element = dtype_size(dtype);
  const int right = (r + 1) % n;
  const int left = (r + n - 1) % n;
  auto block = [&](int b) { return split_range(count, n, ((b % n) + n) % n); };
  const size_t largest = block(0).size() * element;  // split_range gives the first blocks the extra element
  const size_t pieces = std::max<size_t>(1, (largest + kPiece - 1) / kPiece);
  char* scratch = gpu.scratch->reserve(largest);
  // MPI reads device memory at once: what the stream queued before must be done.
  gpu::check_cuda(cudaStreamSynchronize(gpu.stream), "cudaStreamSynchronize before the rail ring");
  for (int s = 0; s < n - 1; ++s) {
    const ElementRange out = block(r - s);
    const ElementRange in = block(r - s - 1);
    exchange(rail, pieces, data + out.begin * element, out.size() * element, right, scratch, in.size() * element,
             left);
    gpu::launch_reduce(dtype, op, data + in.begin * element, scratch, in.size(), gpu.stream);
    gpu::check_cuda(cudaStreamSynchronize(gpu.stream), "cudaStreamSynchronize in the rail ring");
  }
  for (int s = 0; s < n - 1; ++s) {
    const ElementRange out = block(r + 1 - s);
    const ElementRange in = block(r - s);
    exchange(rail, pieces, data + out.begin * element, out.size() * element, right, data + in.begin * element,
             in.size() * element, left);
  }
}

}  // namespace matexcomm
