// cuda_roundtrip.cc - matex-cuda-roundtrip: what two processes on one GPU
// pay for sharing it, with no libmatexcomm in the way. bench/gpu/gpu_check.sh
// runs it beside matex-bench --mem cuda on 2 ranks of one GPU, so that the
// summary can tell the GPU's time-slicing apart from the library's own cost.
//
// Each rank has a pinned host buffer, a device buffer and a stream of its
// own. A "step" is what a staged small collective does on a GPU: copy
// --bytes to the device, back to the host, and synchronize the stream. Four
// figures, each the median over --iters (microseconds):
//   step_alone        rank 0's step while rank 1 waits in a barrier;
//   step_concurrent   both ranks step at once (the GPU serves two contexts);
//   mpi_rtt           a 1-byte MPI ping-pong between the two ranks;
//   rtt_with_steps    the ping-pong with a step on each side before each send:
//                     the hand-over between contexts costs about
//                     (rtt_with_steps - mpi_rtt) / 2 - step_alone per side.
// Output: "ROUNDTRIP memory=cuda|host ranks=2 bytes=B step_alone_us=..
// step_concurrent_us=.. mpi_rtt_us=.. rtt_with_steps_us=.. handover_us=..".
// --host makes the step a host memcpy (for machines without a GPU: it checks
// the program and the script's parsing, not a GPU). Without a GPU and
// without --host it prints "SKIPPED: no GPU (...)" and exits 0.
// Usage: mpirun -np 2 matex-cuda-roundtrip [--bytes N] [--iters N] [--host]
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#ifdef MATEX_BENCH_CUDA
#include <cuda_runtime.h>
#endif

namespace {

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values.empty() ? 0 : values[values.size() / 2];
}

// One step's buffers and work: a round trip through the device, or a host copy.
class Stepper {
 public:
  Stepper(size_t bytes, bool host) : bytes_(bytes), host_(host), a_(bytes, 1), b_(bytes, 0) {}
  ~Stepper() {
#ifdef MATEX_BENCH_CUDA
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
    if (device_ != nullptr) cudaFree(device_);
    if (pinned_ != nullptr) cudaFreeHost(pinned_);
#endif
  }
  Stepper(const Stepper&) = delete;
  Stepper& operator=(const Stepper&) = delete;

  // "" when ready, else why not.
  std::string open() {
    if (host_) return "";
#ifdef MATEX_BENCH_CUDA
    int devices = 0;
    cudaError_t status = cudaGetDeviceCount(&devices);
    if (status != cudaSuccess || devices == 0) {
      return status != cudaSuccess ? std::string("cudaGetDeviceCount: ") + cudaGetErrorString(status)
                                   : std::string("no CUDA device");
    }
    if ((status = cudaMallocHost(&pinned_, bytes_)) != cudaSuccess ||
        (status = cudaMalloc(&device_, bytes_)) != cudaSuccess ||
        (status = cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking)) != cudaSuccess) {
      return std::string("CUDA setup: ") + cudaGetErrorString(status);
    }
    std::memset(pinned_, 1, bytes_);
    return "";
#else
    return "this build has no CUDA";
#endif
  }

  void step() {
    if (host_) {
      std::memcpy(b_.data(), a_.data(), bytes_);
      std::memcpy(a_.data(), b_.data(), bytes_);
      return;
    }
#ifdef MATEX_BENCH_CUDA
    cudaMemcpyAsync(device_, pinned_, bytes_, cudaMemcpyHostToDevice, stream_);
    cudaMemcpyAsync(pinned_, device_, bytes_, cudaMemcpyDeviceToHost, stream_);
    cudaStreamSynchronize(stream_);
#endif
  }

 private:
  size_t bytes_;
  bool host_;
  std::vector<char> a_, b_;
#ifdef MATEX_BENCH_CUDA
  void* pinned_ = nullptr;
  void* device_ = nullptr;
  cudaStream_t stream_ = nullptr;
#endif
};

// Medians of `iters` timed runs of `body`, on rank 0 (the others run it too).
double timed(int iters, const std::function<void()>& body) {
  std::vector<double> seconds;
  for (int i = 0; i < iters; ++i) {
    const double start = MPI_Wtime();
    body();
    seconds.push_back(MPI_Wtime() - start);
  }
  return median(seconds) * 1e6;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  size_t bytes = 1024;
  int iters = 200;
  bool host = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--bytes" && i + 1 < argc) {
      bytes = std::strtoull(argv[++i], nullptr, 10);
    } else if (arg == "--iters" && i + 1 < argc) {
      iters = std::atoi(argv[++i]);
    } else if (arg == "--host") {
      host = true;
    } else {
      if (rank == 0) std::fprintf(stderr, "matex-cuda-roundtrip: unknown argument %s\n", arg.c_str());
      MPI_Finalize();
      return 2;
    }
  }
  if (size != 2 || bytes == 0 || iters < 1) {
    if (rank == 0) {
      std::fprintf(stderr, "matex-cuda-roundtrip: needs exactly 2 ranks (got %d), --bytes > 0 and --iters >= 1\n", size);
    }
    MPI_Finalize();
    return 2;
  }
  Stepper stepper(bytes, host);
  const std::string why = stepper.open();
  int ready = why.empty() ? 1 : 0, all_ready = 0;
  MPI_Allreduce(&ready, &all_ready, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (!all_ready) {
    if (rank == 0) std::printf("SKIPPED: no GPU (%s)\n", why.empty() ? "another rank has none" : why.c_str());
    MPI_Finalize();
    return 0;
  }
  const int peer = 1 - rank;
  char token = 0;
  for (int i = 0; i < 10; ++i) stepper.step();  // warm-up: contexts, pinned pages

  MPI_Barrier(MPI_COMM_WORLD);
  double alone = 0;
  if (rank == 0) alone = timed(iters, [&] { stepper.step(); });
  MPI_Barrier(MPI_COMM_WORLD);

  MPI_Barrier(MPI_COMM_WORLD);
  const double concurrent = timed(iters, [&] { stepper.step(); });
  MPI_Barrier(MPI_COMM_WORLD);

  const auto ping_pong = [&](bool with_steps) {
    return timed(iters, [&] {
      if (rank == 0) {
        if (with_steps) stepper.step();
        MPI_Send(&token, 1, MPI_CHAR, peer, 0, MPI_COMM_WORLD);
        MPI_Recv(&token, 1, MPI_CHAR, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      } else {
        MPI_Recv(&token, 1, MPI_CHAR, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        if (with_steps) stepper.step();
        MPI_Send(&token, 1, MPI_CHAR, peer, 0, MPI_COMM_WORLD);
      }
    });
  };
  MPI_Barrier(MPI_COMM_WORLD);
  const double rtt = ping_pong(false);
  MPI_Barrier(MPI_COMM_WORLD);
  const double rtt_steps = ping_pong(true);
  if (rank == 0) {
    const double handover = std::max(0.0, (rtt_steps - rtt) / 2 - alone);
    std::printf("ROUNDTRIP memory=%s ranks=2 bytes=%zu step_alone_us=%.2f step_concurrent_us=%.2f mpi_rtt_us=%.2f "
                "rtt_with_steps_us=%.2f handover_us=%.2f\n",
                host ? "host" : "cuda", bytes, alone, concurrent, rtt, rtt_steps, handover);
    std::fflush(stdout);
  }
  MPI_Finalize();
  return 0;
}
