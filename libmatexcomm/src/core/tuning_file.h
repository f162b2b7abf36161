// tuning_file.h - the tuning file: collective timings measured by matex-tune
// in one layout on one kind of host, read back by the library
// (MATEX_CALIBRATE=file) and by bench/analysis/scale_model.py.
//
// JSON, versioned (docs/algorithms.md shows an example):
//   {"format": "matex-tuning", "version": 1, "library": "0.2.0",
//    "host_kind": "...", "layout": "p=4;nodes=2,2,;...", "created": "...",
//    "ranks": 4, "node_sizes": [2, 2], "cores_shared": true, "rounds": 5,
//    "collectives": {"allreduce": {"flat": {"alpha_s": ..., "beta_s_per_byte": ...,
//                                           "measured": [[bytes, seconds], ...]}, ...}, ...}}
// A file names what it was measured for (identity); tuning_mismatch() says
// why a file does not fit the communicator at hand, so that it is refused
// rather than used silently.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace matexcomm {

struct TimedSize {
  uint64_t bytes = 0;
  double seconds = 0;  // the slowest rank's, per call
};

// One algorithm's times and its fitted cost: seconds = alpha + beta * bytes.
struct AlgorithmCost {
  std::vector<TimedSize> measured;  // by growing size
  double alpha_seconds = 0;
  double beta_seconds_per_byte = 0;
};

struct TuningIdentity {
  std::string library;    // the library version that measured
  std::string host_kind;  // topo::host_kind() of rank 0
  std::string layout;     // Communicator::layout_shape(): ranks per node and what the table depends on
};

struct TuningFile {
  static constexpr int kVersion = 1;
  TuningIdentity identity;
  std::string created;  // UTC, ISO 8601
  int ranks = 0;
  std::vector<int> node_sizes;
  bool cores_shared = false;
  int rounds = 0;  // timed calls per size (the median counts)
  // collective ("allreduce", "broadcast", ...) -> algorithm name -> cost
  std::map<std::string, std::map<std::string, AlgorithmCost>> collectives;

  std::string to_json() const;
  // Throws Error(MATEX_ERR_INVALID_ARG) naming what is malformed or missing.
  static TuningFile parse(const std::string& text);
  // parse() of the file at `path`; the error names the path.
  static TuningFile read(const std::string& path);
};

// Empty when a file measured for `file` may serve `here`; otherwise why not,
// naming each mismatch ("written by libmatexcomm 0.1.0, this is 0.2.0";
// "layout: nodes 2, here 2,2").
std::string tuning_mismatch(const TuningIdentity& file, const TuningIdentity& here);

// Where the tuning file is looked for when MATEX_TUNING_FILE is empty:
// $XDG_CACHE_HOME/matex/tuning.json, or $HOME/.cache/matex/tuning.json.
std::string default_tuning_path();

}  // namespace matexcomm
