// gpu_microbench.cc - matex-gpu-microbench: what the GPU path's building
// blocks reach on one GPU, in one process, next to the copies they are made
// of, for sizes 1 MiB, 4 MiB, ... up to --max-bytes:
//   1. device-to-device cudaMemcpyAsync;
//   2. launch_batched_copy packing 64 equal tensors, and ResNet-50's gradient
//      mix, into a fusion buffer and unpacking them (% of 1.);
//   3. pinned D2H and H2D cudaMemcpyAsync, and both at once on two streams;
//   4. HostStagingPipeline::run with chunks of 1, 4, 16 MiB and 2 or 3 slots
//      (% of min(D2H, H2D)); the library's default also with an MPI step.
// Every measurement is checked against the source bytes.
//
//   matex-gpu-microbench [--max-bytes 1G] [--json FILE]
//
// Output: '#' lines and tables, then "SUMMARY key=value ..." (see
// gpu_microbench_report.h). Exit status: 0 all bytes right, 1 some wrong,
// 2 bad flag or no GPU ("SKIPPED: no GPU (<reason>)"), 3 a CUDA error.
#include <cuda_runtime.h>
#include <mpi.h>

#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "bench_options.h"  // parse_byte_size
#include "gpu/cuda_check.h"
#include "gpu/device_pointer.h"
#include "gpu_microbench_report.h"
#include "gpu_tensor_mix.h"

namespace matexbench {
namespace {

constexpr size_t kMinBytes = size_t{1} << 20;
constexpr size_t kStepFactor = 4;
constexpr size_t kEqualTensors = 64;
const size_t kStagingChunks[] = {size_t{1} << 20, size_t{4} << 20, size_t{16} << 20};
const int kStagingSlots[] = {2, 3};

struct Flags {
  size_t max_bytes = size_t{1} << 30;
  std::string json_path;
  bool help = false;
};

const char kUsage[] =
    "usage: matex-gpu-microbench [--max-bytes SIZE] [--json FILE]\n"
    "  --max-bytes SIZE  largest total size (K/M/G suffixes, >= 1M), default 1G; sizes 1M, 4M, 16M, ...\n"
    "  --json FILE       also write the results as JSON\n"
    "  -h, --help        this text\n"
    "One process on GPU 0. Without a GPU: prints 'SKIPPED: no GPU (<reason>)' and exits with status 2.\n";

// "" or the error, naming the flag.
std::string parse_flags(int argc, char** argv, Flags* flags) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    std::string value;
    const size_t equals = arg.find('=');
    const bool inline_value = arg.rfind("--", 0) == 0 && equals != std::string::npos;
    if (inline_value) value = arg.substr(equals + 1), arg = arg.substr(0, equals);
    if (arg == "-h" || arg == "--help") {
      flags->help = true;
      continue;
    }
    if (arg != "--max-bytes" && arg != "--json") return arg + ": unknown flag (see --help)";
    if (!inline_value) {
      if (i + 1 >= argc) return arg + ": missing value";
      value = argv[++i];
    }
    if (arg == "--json") {
      if (value.empty()) return "--json: expected a file name";
      flags->json_path = value;
    } else if (!parse_byte_size(value, &flags->max_bytes) || flags->max_bytes < kMinBytes) {
      return "--max-bytes '" + value + "': expected a size of at least 1M (K/M/G suffixes)";
    }
  }
  return "";
}

// MPI for the staging pipeline's MPI step; finalized at scope exit.
class MpiSession {
 public:
  MpiSession(int* argc, char*** argv) { MPI_Init(argc, argv); }
  ~MpiSession() { MPI_Finalize(); }
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;
};

std::string describe_device(int device) {
  cudaDeviceProp properties{};
  matexcomm::gpu::check_cuda(cudaGetDeviceProperties(&properties, device), "cudaGetDeviceProperties");
  int runtime = 0, driver = 0;
  (void)cudaRuntimeGetVersion(&runtime);
  (void)cudaDriverGetVersion(&driver);
  auto version = [](int v) { return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10); };
  return "GPU " + std::to_string(device) + ": " + properties.name + ", " +
         std::to_string(properties.multiProcessorCount) + " SMs, CUDA runtime " + version(runtime) + ", driver " +
         version(driver);
}

SizeResults measure_size(GpuWorkspace& workspace, size_t bytes) {
  SizeResults r;
  r.bytes = bytes;
  r.d2d = workspace.device_to_device(bytes);
  const TensorMix equal = equal_tensor_mix(bytes, kEqualTensors);
  r.equal_tensors = equal.bytes.size();
  r.equal_pack = workspace.pack_unpack(equal);
  const TensorMix resnet50 = resnet50_tensor_mix(bytes);
  r.resnet50_tensors = resnet50.bytes.size();
  r.resnet50_pack = workspace.pack_unpack(resnet50);
  r.host = workspace.host_copies(bytes);
  for (size_t chunk : kStagingChunks) {
    for (int slots : kStagingSlots) r.staging.push_back(workspace.staging(bytes, chunk, slots, StagingStep::kNothing));
  }
  r.staging_mpi = workspace.staging(bytes, kDefaultStagingChunkBytes, kDefaultStagingSlots,
                                    StagingStep::kMpiAllreduceSelf);
  return r;
}

int run(const Flags& flags) {
  matexcomm::gpu::check_cuda(cudaSetDevice(0), "cudaSetDevice");
  const std::string device = describe_device(0);
  std::printf("# matex-gpu-microbench: %s\n", device.c_str());
  std::printf("# sizes %zu .. %zu bytes (x%zu); each time the median of %d timed repetitions after %d warm-up, "
              "cudaEvent timing; GB/s = 1e9 bytes/s\n",
              kMinBytes, flags.max_bytes, kStepFactor, kTimedRepetitions, kWarmupRepetitions);
  std::fflush(stdout);
  GpuWorkspace workspace(flags.max_bytes);
  std::vector<SizeResults> results;
  for (size_t bytes = kMinBytes; bytes <= flags.max_bytes; bytes *= kStepFactor) {
    results.push_back(measure_size(workspace, bytes));
    std::printf("# measured %zu bytes: %llu wrong\n", bytes, static_cast<unsigned long long>(results.back().wrong()));
    std::fflush(stdout);
    if (bytes > flags.max_bytes / kStepFactor) break;
  }
  for (const std::string& line : result_tables(results)) std::printf("%s\n", line.c_str());
  for (const std::string& line : summary_lines(results)) std::printf("%s\n", line.c_str());
  std::fflush(stdout);
  if (!flags.json_path.empty()) {
    const std::string error = write_gpu_microbench_json(flags.json_path, device, results);
    if (!error.empty()) {
      std::fprintf(stderr, "matex-gpu-microbench: %s\n", error.c_str());
      return 2;
    }
  }
  uint64_t wrong = 0;
  for (const SizeResults& r : results) wrong += r.wrong();
  return wrong == 0 ? 0 : 1;
}

}  // namespace
}  // namespace matexbench

int main(int argc, char** argv) {
  using namespace matexbench;
  Flags flags;
  const std::string error = parse_flags(argc, argv, &flags);
  if (!error.empty()) {
    std::fprintf(stderr, "matex-gpu-microbench: %s\n", error.c_str());
    return 2;
  }
  if (flags.help) {
    std::printf("%s", kUsage);
    return 0;
  }
  std::string why_none;
  if (matexcomm::gpu::usable_device_count(&why_none) <= 0) {
    std::printf("SKIPPED: no GPU (%s)\n", why_none.c_str());
    return 2;
  }
  MpiSession mpi(&argc, &argv);
  int world_size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &world_size);
  if (world_size != 1) {
    std::fprintf(stderr, "matex-gpu-microbench: runs as one process (started with %d)\n", world_size);
    return 2;
  }
  try {
    return run(flags);
  } catch (const std::exception& failure) {
    std::fprintf(stderr, "matex-gpu-microbench: %s\n", failure.what());
    return 3;
  }
}
