// bench_options.h - the command line of matex-bench (nccl-tests conventions:
// -b/-e/-f sizes, -n/-w iterations, -c check, -d dtype, -o op, -r root) plus
// --coll, --algo, --compare mpi|all, --mem host|cuda, --print-config and -J FILE.
//
// Parsing is a pure function of argv, so every rank reaches the same verdict
// and a bad flag ends every rank the same way (exit 2, no hang).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "matexcomm/matexcomm.h"

namespace matexbench {

// Where the buffers that the collectives run on live (--mem).
enum class BufferMemory { kHost, kCuda };

struct Options {
  size_t min_bytes = 32u << 20;
  size_t max_bytes = 32u << 20;
  size_t step_factor = 2;
  int iterations = 20;
  int warmup_iterations = 5;
  bool check = true;
  std::vector<matex_dtype_t> dtypes{MATEX_FLOAT32};
  std::vector<matex_op_t> ops{MATEX_SUM};
  bool dtype_all = false;  // -d all: skip pairs that are not allowed (avg on integers)
  bool op_all = false;     // -o all: same
  int root = 0;
  matex_collective_t coll = MATEX_COLL_ALLREDUCE;
  std::string algorithm = "auto";
  bool algorithm_given = false;
  bool compare_mpi = false;         // --compare mpi or all
  bool compare_algorithms = false;  // --compare all: also every forced algorithm, interleaved with auto
  bool scale_iterations = false;
  BufferMemory memory = BufferMemory::kHost;  // --mem cuda: cudaMalloc'd send/recv buffers
  std::string workload;           // --workload: "" (collectives), "resnet50" or "small"  // --scale-iterations: more calls below 1 MiB (see usage_text)
  bool print_config = false;
  bool explain = false;       // --explain: print how auto chooses on this layout, and exit
  bool help = false;
  std::string json_path;       // empty: no JSON
  std::string command_line;    // argv joined, quoted where needed
};

// Fills *options from argv. Returns "" on success, otherwise a message that
// names the offending flag and value.
std::string parse_options(int argc, char** argv, Options* options);

// The --help text.
std::string usage_text();

// "allreduce" etc.
const char* collective_name(matex_collective_t coll);

// Whether `coll` takes a reduction operator (allreduce, reduce_scatter).
bool collective_reduces(matex_collective_t coll);

// Parses "4", "64K", "1M", "2G" (binary multiples). False on junk or overflow.
bool parse_byte_size(const std::string& text, size_t* bytes);

}  // namespace matexbench
