// bench_options.cc - parsing of the matex-bench command line (see bench_options.h).
#include "bench_options.h"

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <map>
#include <utility>

namespace matexbench {
namespace {

#ifdef MATEX_BENCH_CUDA
constexpr bool kBuiltWithCuda = true;
#else
constexpr bool kBuiltWithCuda = false;
#endif

// Vectors, not maps: "all" runs in this (enum) order.
const std::vector<std::pair<std::string, matex_dtype_t>> kDtypes = {
    {"int8", MATEX_INT8},         {"uint8", MATEX_UINT8},       {"int32", MATEX_INT32},
    {"int64", MATEX_INT64},       {"float16", MATEX_FLOAT16},   {"bfloat16", MATEX_BFLOAT16},
    {"float32", MATEX_FLOAT32},   {"float64", MATEX_FLOAT64},   {"bool", MATEX_BOOL},
    {"int16", MATEX_INT16},       {"uint16", MATEX_UINT16},     {"uint32", MATEX_UINT32},
    {"uint64", MATEX_UINT64}};
const std::vector<std::pair<std::string, matex_op_t>> kOps = {
    {"sum", MATEX_SUM},   {"prod", MATEX_PROD}, {"min", MATEX_MIN},  {"max", MATEX_MAX},
    {"avg", MATEX_AVG},   {"band", MATEX_BAND}, {"bor", MATEX_BOR},  {"bxor", MATEX_BXOR}};
const std::vector<std::pair<std::string, matex_collective_t>> kCollectives = {
    {"allreduce", MATEX_COLL_ALLREDUCE},
    {"broadcast", MATEX_COLL_BROADCAST},
    {"allgather", MATEX_COLL_ALLGATHER},
    {"reduce_scatter", MATEX_COLL_REDUCE_SCATTER}};

// Long spellings of the short flags (nccl-tests names) and the long-only flags.
const std::map<std::string, std::string> kLongToShort = {
    {"--minbytes", "-b"}, {"--maxbytes", "-e"},      {"--stepfactor", "-f"}, {"--iters", "-n"},
    {"--warmup_iters", "-w"}, {"--check", "-c"},     {"--datatype", "-d"},   {"--op", "-o"},
    {"--root", "-r"},     {"--output_file", "-J"},   {"--help", "-h"}};
const char* const kValueFlags[] = {"-b", "-e", "-f", "-n", "-w", "-c", "-d", "-o", "-r", "-J",
                                   "--coll", "--algo", "--compare", "--workload", "--mem"};

bool takes_value(const std::string& flag) {
  for (const char* name : kValueFlags) {
    if (flag == name) return true;
  }
  return false;
}

bool parse_int(const std::string& text, long min, long max, int* out) {
  if (text.empty()) return false;
  char* end = nullptr;
  errno = 0;
  long value = std::strtol(text.c_str(), &end, 10);
  if (errno != 0 || *end != '\0' || value < min || value > max) return false;
  *out = static_cast<int>(value);
  return true;
}

std::string quote(const std::string& arg) {
  if (!arg.empty() && arg.find_first_of(" \t\"'\\$`") == std::string::npos) return arg;
  std::string quoted = "'";
  for (char c : arg) quoted += (c == '\'') ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

std::string bad(const std::string& flag, const std::string& value, const std::string& why) {
  return flag + " '" + value + "': " + why;
}

// Applies one flag; returns "" or the error.
std::string apply(const std::string& flag, const std::string& value, Options* o) {
  int number = 0;
  if (flag == "-b" || flag == "-e") {
    size_t bytes = 0;
    if (!parse_byte_size(value, &bytes) || bytes == 0)
      return bad(flag, value, "expected a positive size in bytes, optionally with K, M or G");
    (flag == "-b" ? o->min_bytes : o->max_bytes) = bytes;
  } else if (flag == "-f") {
    if (!parse_int(value, 2, 1 << 20, &number)) return bad(flag, value, "expected an integer factor >= 2");
    o->step_factor = static_cast<size_t>(number);
  } else if (flag == "-n") {
    if (!parse_int(value, 1, INT_MAX, &o->iterations)) return bad(flag, value, "expected an integer >= 1");
  } else if (flag == "-w") {
    if (!parse_int(value, 0, INT_MAX, &o->warmup_iterations)) return bad(flag, value, "expected an integer >= 0");
  } else if (flag == "-c") {
    if (!parse_int(value, 0, 1, &number)) return bad(flag, value, "expected 0 or 1");
    o->check = number == 1;
  } else if (flag == "-d") {
    o->dtype_all = value == "all";
    o->dtypes.clear();
    for (const auto& [name, dtype] : kDtypes) {
      if (o->dtype_all || value == name) o->dtypes.push_back(dtype);
    }
    if (o->dtypes.empty())
      return bad(flag, value, "expected int8, uint8, int32, int64, float16, bfloat16, float32, float64 or all");
  } else if (flag == "-o") {
    o->op_all = value == "all";
    o->ops.clear();
    for (const auto& [name, op] : kOps) {
      if (o->op_all || value == name) o->ops.push_back(op);
    }
    if (o->ops.empty()) return bad(flag, value, "expected sum, prod, min, max, avg or all");
  } else if (flag == "-r") {
    if (!parse_int(value, 0, INT_MAX, &o->root)) return bad(flag, value, "expected a rank >= 0");
  } else if (flag == "-J") {
    if (value.empty()) return bad(flag, value, "expected a file name");
    o->json_path = value;
  } else if (flag == "--coll") {
    bool known = false;
    for (const auto& [name, coll] : kCollectives) {
      if (value == name) o->coll = coll, known = true;
    }
    if (!known) return bad(flag, value, "expected allreduce, broadcast, allgather or reduce_scatter");
  } else if (flag == "--algo") {
    if (value.empty()) return bad(flag, value, "expected an algorithm name or auto");
    o->algorithm = value;
    o->algorithm_given = value != "auto";
  } else if (flag == "--workload") {
    if (value != "resnet50" && value != "small") return bad(flag, value, "expected resnet50 or small");
    o->workload = value;
  } else if (flag == "--mem") {
    if (value != "host" && value != "cuda") return bad(flag, value, "expected host or cuda");
    if (value == "cuda" && !kBuiltWithCuda) return "--mem cuda: this build has no CUDA";
    o->memory = value == "cuda" ? BufferMemory::kCuda : BufferMemory::kHost;
  } else if (flag == "--compare") {
    if (value != "mpi" && value != "all") return bad(flag, value, "expected mpi or all");
    o->compare_mpi = true;
    o->compare_algorithms = value == "all";
  }
  return "";
}

}  // namespace

bool parse_byte_size(const std::string& text, size_t* bytes) {
  if (text.empty() || text[0] < '0' || text[0] > '9') return false;
  char* end = nullptr;
  errno = 0;
  unsigned long long value = std::strtoull(text.c_str(), &end, 10);
  if (errno != 0) return false;
  std::string suffix(end);
  unsigned shift = 0;
  if (suffix == "K" || suffix == "k") shift = 10;
  else if (suffix == "M" || suffix == "m") shift = 20;
  else if (suffix == "G" || suffix == "g") shift = 30;
  else if (!suffix.empty()) return false;
  if (value > (ULLONG_MAX >> (shift + 1))) return false;
  *bytes = static_cast<size_t>(value << shift);
  return true;
}

std::string parse_options(int argc, char** argv, Options* options) {
  Options o;
  for (int i = 0; i < argc; ++i) o.command_line += (i ? " " : "") + quote(argv[i]);
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    std::string value;
    bool has_value = false;
    if (arg.rfind("--", 0) == 0 && arg.find('=') != std::string::npos) {  // --flag=value
      value = arg.substr(arg.find('=') + 1);
      arg = arg.substr(0, arg.find('='));
      has_value = true;
    }
    if (kLongToShort.count(arg)) arg = kLongToShort.at(arg);
    if (arg.size() > 2 && arg[0] == '-' && arg[1] != '-' && takes_value(arg.substr(0, 2))) {  // -b8
      value = arg.substr(2);
      arg = arg.substr(0, 2);
      has_value = true;
    }
    if (arg == "-h") {
      o.help = true;
    } else if (arg == "--print-config") {
      o.print_config = true;
    } else if (arg == "--explain") {
      o.explain = true;
    } else if (arg == "--scale-iterations") {
      o.scale_iterations = true;
    } else if (takes_value(arg)) {
      if (!has_value) {
        if (i + 1 >= argc) return arg + ": missing value";
        value = argv[++i];
      }
      std::string error = apply(arg, value, &o);
      if (!error.empty()) return error;
    } else {
      return arg + ": unknown flag (see --help)";
    }
  }
  if (o.min_bytes > o.max_bytes) return "-b/-e: the minimum size exceeds the maximum size";
  if (o.compare_algorithms && o.algorithm_given)
    return "--compare all: times auto against every algorithm; it cannot be combined with --algo " + o.algorithm;
  if (o.memory == BufferMemory::kCuda && !o.workload.empty())
    return "--mem cuda: not available with --workload (the workload's tensors are host memory)";
  if (!o.dtype_all && !o.op_all && collective_reduces(o.coll) && o.ops[0] == MATEX_AVG) {
    matex_dtype_t d = o.dtypes[0];
    if (d != MATEX_FLOAT16 && d != MATEX_BFLOAT16 && d != MATEX_FLOAT32 && d != MATEX_FLOAT64)
      return "-o avg: needs a floating dtype (-d float16, bfloat16, float32 or float64)";
  }
  const bool bitwise = !o.op_all && (o.ops[0] == MATEX_BAND || o.ops[0] == MATEX_BOR || o.ops[0] == MATEX_BXOR);
  if (!o.dtype_all && bitwise && collective_reduces(o.coll)) {
    matex_dtype_t d = o.dtypes[0];
    if (d == MATEX_FLOAT16 || d == MATEX_BFLOAT16 || d == MATEX_FLOAT32 || d == MATEX_FLOAT64)
      return "-o band/bor/bxor: needs an integer or bool dtype";
  }
  *options = o;
  return "";
}

const char* collective_name(matex_collective_t coll) {
  for (const auto& [name, value] : kCollectives) {
    if (value == coll) return name.c_str();
  }
  return "unknown";
}

bool collective_reduces(matex_collective_t coll) {
  return coll == MATEX_COLL_ALLREDUCE || coll == MATEX_COLL_REDUCE_SCATTER;
}

std::string usage_text() {
  return "usage: mpirun -np P matex-bench [options]\n"
         "  -b SIZE   smallest size in bytes (K/M/G suffixes), default 32M\n"
         "  -e SIZE   largest size in bytes, default 32M\n"
         "  -f N      size multiplication factor (>= 2), default 2\n"
         "  -n N      timed iterations per size, default 20\n"
         "  -w N      warm-up iterations per size, default 5\n"
         "  -c 0|1    check every element of the last iteration, default 1\n"
         "  -d TYPE   int8|uint8|int16|uint16|int32|uint32|int64|uint64|bool|float16|bfloat16|float32|\n"
         "            float64|all, default float32\n"
         "  -o OP     sum|prod|min|max|avg|band|bor|bxor|all, default sum (with all, avg is skipped for\n"
         "            integers and bool, band/bor/bxor for floating types)\n"
         "  -r ROOT   broadcast root, default 0\n"
         "  -J FILE   write the results as JSON (rank 0)\n"
         "  --coll allreduce|broadcast|allgather|reduce_scatter   default allreduce\n"
         "  --algo NAME|auto   force an algorithm (names: docs/algorithms.md)\n"
         "  --compare mpi      also time the plain MPI collective, interleaved\n"
         "  --compare all      time auto, every algorithm forced in turn and MPI, interleaved\n"
         "                     call by call (shuffled afresh each iteration, alike on every\n"
         "                     rank), and print how auto fares\n"
         "                     against the fastest of them (all results are checked)\n"
         "  --mem host|cuda    where the send/recv buffers live, default host. cuda: cudaMalloc'd\n"
         "                     buffers on GPU (local rank % GPUs); inputs are written and results\n"
         "                     checked on the host, copied outside the timed region; every timed\n"
         "                     call ends with a stream synchronize. --compare mpi passes the device\n"
         "                     buffers to a CUDA-aware MPI, otherwise times D2H + MPI + H2D through\n"
         "                     pageable host memory (as Horovod does). Without a GPU: prints\n"
         "                     'SKIPPED: no GPU (...)' on every rank and exits with status 2\n" +
         std::string(kBuiltWithCuda ? "" : "                     (unavailable: this build has no CUDA)\n") +
         "  --scale-iterations below 1 MiB, time n x min(100, 1 MiB / size) calls instead of n\n"
         "                     (as OSU's benchmarks do), so that one preempted call does not\n"
         "                     dominate a mean of microseconds\n"
         "  --print-config     print the effective MATEX_* configuration and exit\n"
         "  --explain          print how auto chooses on this layout (the allreduce table\n"
         "                     measured at start-up, MATEX_CALIBRATE) and exit\n"
         "  --workload resnet50|small   time engine steps instead of single collectives: every\n"
         "                     step submits ResNet-50's 161 gradients (reverse layer order) or\n"
         "                     1,000 tensors of 4 KiB, then waits for all; -n steps, -w warm-up\n"
         "  -h, --help         this text\n"
         "size is the per-rank buffer: the total receive size for allgather, the\n"
         "total send size for reduce_scatter (as in nccl-tests).\n";
}

}  // namespace matexbench
