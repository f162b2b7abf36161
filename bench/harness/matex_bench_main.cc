// matex_bench_main.cc - matex-bench: nccl-tests style timing and checking of
// libmatexcomm's collectives, optionally side by side with plain MPI.
//
//   mpirun -np 4 matex-bench -b 8 -e 256M -f 2 -d float32 -o sum --compare mpi -J out.json
//   mpirun -np 2 matex-bench --mem cuda -b 8 -e 256M --compare mpi   (device buffers, one GPU per rank)
//   mpirun -np 4 matex-bench -b 256 -e 64M -f 4 --compare all   (auto against every algorithm and MPI)
//
// Exit status: 0 all values right, 1 some value wrong, 2 bad flag (or -J file not
// writable, or --mem cuda without a GPU: "SKIPPED: no GPU (...)" on every rank),
// 3 a call failed.
#include <mpi.h>

#include <climits>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bench_options.h"
#include "bench_preamble.h"
#include "collective_runner.h"
#include "core/algorithm_catalog.h"
#include "device_buffers.h"
#include "element_codec.h"
#include "json_report.h"
#include "race_table.h"
#include "memcpy_bandwidth.h"
#include "rank_latency.h"
#include "result_table.h"
#include "workload_runner.h"

namespace matexbench {
namespace {

// Initializes MPI (as matex_init would: MPI_THREAD_MULTIPLE) and finalizes it
// at scope exit, after every matex communicator and MPI object is gone.
class MpiSession {
 public:
  MpiSession(int* argc, char*** argv) {
    int provided = 0;
    MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  }
  ~MpiSession() { MPI_Finalize(); }
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;
  int rank() const { return rank_; }

 private:
  int rank_ = 0;
};

void print(const std::vector<std::string>& lines) {
  for (const std::string& line : lines) std::printf("%s\n", line.c_str());
  std::fflush(stdout);
}

// -b, -b*f, -b*f^2, ... up to -e.
std::vector<size_t> size_steps(const Options& options) {
  std::vector<size_t> sizes;
  for (size_t bytes = options.min_bytes; bytes <= options.max_bytes; bytes *= options.step_factor) {
    sizes.push_back(bytes);
    if (bytes > options.max_bytes / options.step_factor) break;
  }
  return sizes;
}

// The checks that need the world size; "" when fine. Same verdict on every rank.
std::string validate_for_world(const Options& options, int world_size) {
  if (descriptor_of(options.coll).rooted && options.root >= world_size)
    return "-r " + std::to_string(options.root) + ": the root must be below the world size " + std::to_string(world_size);
  if (options.compare_mpi) {
    for (matex_dtype_t dtype : options.dtypes) {
      if (call_count_for(options.coll, options.max_bytes, matex_dtype_size(dtype), world_size) > size_t{INT_MAX})
        return "-e " + std::to_string(options.max_bytes) + ": too many " + matex_dtype_name(dtype) +
               " elements for MPI's int counts (--compare mpi)";
    }
  }
  return "";
}

// --compare all: every algorithm of the collective (docs/algorithms.md), each
// forced in turn; one that does not run as itself here drops out on its first call.
std::vector<std::string> raced_algorithms(const Options& options) {
  if (!options.compare_algorithms) return {};
  std::vector<std::string> names = matexcomm::algorithm_names(options.coll);  // "auto" first
  names.erase(names.begin());
  return names;
}

// --workload: engine steps against one allreduce of the same bytes.
int run_workload_mode(const Options& options, matex::Communicator& comm, int rank, const RunContext& context) {
  const std::vector<WorkloadTensor> tensors = workload_tensors(options.workload);
  const WorkloadResult r = run_workload(comm.handle(), tensors, options.iterations, options.warmup_iterations,
                                        options.check);
  if (rank == 0) {
    char line[512];
    std::snprintf(line, sizeof line, "# workload %s: %zu float32 tensors, %zu elements (%.1f MB) per step",
                  options.workload.c_str(), r.tensors, r.elements, r.elements * 4 / 1e6);
    print({line,
           "#      step_us  single_allreduce_us   ratio  tensors/s  idle_cycle_us  idle_max_us  cached_cycles  "
           "full_cycles  fused  #wrong"});
    std::snprintf(line, sizeof line, "  %11.1f  %19.1f  %6.3f  %9.0f  %13.1f  %11.1f  %13llu  %11llu  %5llu  %6s",
                  r.step_us, r.single_allreduce_us, r.ratio, r.tensors_per_second, r.idle_coordination_us,
                  r.idle_coordination_max_us,
                  static_cast<unsigned long long>(r.cached_cycles), static_cast<unsigned long long>(r.full_cycles),
                  static_cast<unsigned long long>(r.fused_responses),
                  options.check ? std::to_string(r.wrong).c_str() : "N/A");
    print({line});
    if (!options.json_path.empty()) {
      const std::string json_error = write_workload_json(options.json_path, context, r);
      if (!json_error.empty()) {
        std::fprintf(stderr, "matex-bench: %s\n", json_error.c_str());
        return 2;
      }
    }
  }
  return r.wrong == 0 ? 0 : 1;
}

// `text` with "# " before each of its lines, so that it reads as comments.
std::string comment_lines(const std::string& text) {
  std::string out;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    out += "# " + text.substr(start, end - start) + "\n";
    start = end + 1;
  }
  return out;
}

int run_benchmark(const Options& options, int rank) {
  if (options.memory == BufferMemory::kCuda) {
    // Before the communicator, which may set up the GPU path. Every rank
    // checks and reports; all ranks agree, so all end here together.
    const std::string failure = select_rank_device();
    if (!failure.empty()) {
      std::FILE* stream = failure.rfind("SKIPPED", 0) == 0 ? stdout : stderr;
      std::fprintf(stream, "%s\n", failure.c_str());
      std::fflush(stream);
      return 2;
    }
  }
  matex::Communicator comm;
  const int world_size = comm.size();
  std::string error = validate_for_world(options, world_size);
  if (error.empty()) {
    matex_status_t status = matex_set_algorithm(comm.handle(), options.coll, options.algorithm.c_str());
    if (status != MATEX_SUCCESS) error = "--algo " + options.algorithm + ": " + matex_last_error();
  }
  if (!error.empty()) {
    if (rank == 0) std::fprintf(stderr, "matex-bench: %s\n", error.c_str());
    return 2;
  }
  if (options.explain) {
    const char* text = nullptr;
    if (matex_describe_selection(comm.handle(), &text) != MATEX_SUCCESS) {
      std::fprintf(stderr, "matex-bench: --explain: %s\n", matex_last_error());
      return 1;
    }
    if (rank == 0) std::printf("# %d ranks; how auto chooses:\n%s", world_size, text);
    return 0;
  }
  const Layout layout = gather_layout(comm);
  const std::vector<size_t> sizes = size_steps(options);
  std::unique_ptr<DeviceBuffers> device;
  std::vector<std::string> memory_lines;
  if (options.memory == BufferMemory::kCuda) {
    device = open_device_buffers(comm.handle(), sizes.back());
    memory_lines = device->describe(options.compare_mpi);
  }
  const double memcpy_gbps = measure_memcpy_gbps_on_rank0();
  const double latency_us = measure_rank_latency_us();
  if (rank == 0) print(preamble_lines(options, layout, memcpy_gbps, latency_us, memory_lines));
  if (!options.workload.empty()) return run_workload_mode(options, comm, rank, RunContext{&options, &layout, memcpy_gbps, nullptr, nullptr, latency_us});

  AlignedBuffer send(sizes.back());
  AlignedBuffer recv(sizes.back());
  std::optional<MpiBaseline> mpi;
  if (options.compare_mpi) mpi.emplace();
  CollectiveRunner runner(comm, mpi ? &*mpi : nullptr, send, recv, options.iterations, options.warmup_iterations,
                          options.check, options.scale_iterations, device.get(), raced_algorithms(options));
  ResultTable table(options.coll, world_size, options.compare_mpi, options.check);
  if (rank == 0) print(table.header());

  const CollectiveDescriptor& collective = descriptor_of(options.coll);
  const bool reduces = collective.reduces;
  const std::vector<matex_op_t> ops = reduces ? options.ops : std::vector<matex_op_t>{MATEX_SUM};
  std::vector<ResultRow> rows;
  for (matex_dtype_t dtype : options.dtypes) {
    for (matex_op_t op : ops) {
      if (op == MATEX_AVG && !dtype_is_float(dtype)) continue;  // only reachable through "all"
      if ((op == MATEX_BAND || op == MATEX_BOR || op == MATEX_BXOR) && dtype_is_float(dtype)) continue;  // likewise
      const ReferencePatterns patterns(dtype, op, reduces, world_size);
      size_t previous_bytes = 0;
      for (size_t size : sizes) {
        CaseSpec spec{options.coll, dtype, op, options.root, 0, false};
        spec.count = call_count_for(options.coll, size, matex_dtype_size(dtype), world_size);
        ResultRow row;
        row.count = row_elements(options.coll, spec.count, world_size);
        row.bytes = row.count * matex_dtype_size(dtype);
        if (spec.count == 0 || row.bytes == previous_bytes) continue;  // too small, or same as the last row
        previous_bytes = row.bytes;
        row.dtype = dtype;
        row.redop = reduces ? matex_op_name(op) : "none";
        row.root = collective.rooted ? options.root : -1;
        for (bool in_place : {false, true}) {
          if (collective.only_in_place && !in_place) continue;  // one buffer (broadcast)
          spec.in_place = in_place;
          row.has[in_place] = true;
          row.result[in_place] = runner.run(spec, patterns);
        }
        std::vector<std::string> lines = table.format(row);
        if (rank == 0) print(lines);
        rows.push_back(row);
      }
    }
  }
  // After a race, how auto chose: the table or the sizes, and what its trials settled.
  const char* chosen_by = nullptr;
  if (options.compare_algorithms && matex_describe_selection(comm.handle(), &chosen_by) != MATEX_SUCCESS) {
    chosen_by = nullptr;
  }
  if (rank == 0) {
    print(table.footer());
    if (options.compare_algorithms) print(race_table(runner.forced_algorithms(), rows));
    if (chosen_by != nullptr) std::printf("#\n# how auto chose:\n%s", comment_lines(chosen_by).c_str());
    if (!options.json_path.empty()) {
      const RunContext context{&options, &layout, memcpy_gbps, device.get(),
                               options.compare_algorithms ? &runner.forced_algorithms() : nullptr, latency_us};
      std::string json_error = write_json_report(options.json_path, context, rows);
      if (!json_error.empty()) {
        std::fprintf(stderr, "matex-bench: %s\n", json_error.c_str());
        return 2;  // rank 0 only: mpirun still reports the failure
      }
    }
  }
  return table.failed() ? 1 : 0;
}

}  // namespace
}  // namespace matexbench

int main(int argc, char** argv) {
  using namespace matexbench;
  Options options;
  const std::string parse_error = parse_options(argc, argv, &options);
  if (parse_error.empty() && options.help) {
    std::printf("%s", usage_text().c_str());
    return 0;
  }
  if (parse_error.empty() && options.print_config) {  // no MPI needed
    const std::vector<std::string> lines = config_lines();
    for (const std::string& line : lines) std::printf("%s\n", line.c_str());
    return lines.size() == 1 && lines[0].rfind("invalid configuration", 0) == 0 ? 2 : 0;
  }
  MpiSession session(&argc, &argv);
  if (!parse_error.empty()) {
    if (session.rank() == 0) std::fprintf(stderr, "matex-bench: %s\n", parse_error.c_str());
    return 2;
  }
  try {
    return run_benchmark(options, session.rank());
  } catch (const std::exception& error) {
    std::fprintf(stderr, "matex-bench: rank %d: %s\n", session.rank(), error.what());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 3);
    return 3;
  }
}
