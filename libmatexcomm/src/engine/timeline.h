// timeline.h - MATEX_TIMELINE: the engine's life as a Chrome trace (JSON array
// of complete events), for chrome://tracing or Perfetto.
//
// One row (tid) per tensor name, one process (pid) per rank. Per tensor:
// "queue" (submit until the engine thread picks it up), "negotiate" (until all
// ranks have it and rank 0's answer arrived), then "pack", "allreduce" or
// "broadcast" (args: algorithm, bytes, how many tensors were fused), "unpack".
// Under the collective, its algorithm's phases ("copy-in", "reduce", "rail",
// "copy-out", "wait"): each bar is the phase's total over the pipeline's rounds.
// A path containing "%r" gets the rank there and every rank writes its file;
// otherwise only rank 0 writes (as the coordinator it sees every name).
// Events go through a buffered stream; the array is closed when the engine
// stops. Only the engine's thread records.
#pragma once

#include <chrono>
#include <cstdio>
#include <string>
#include <unordered_map>

namespace matexcomm {

class Timeline {
 public:
  using Clock = std::chrono::steady_clock;
  // Inactive when path is empty, or when it has no "%r" and rank != 0.
  Timeline(const std::string& path, int rank);
  ~Timeline();
  Timeline(const Timeline&) = delete;
  Timeline& operator=(const Timeline&) = delete;

  bool active() const { return file_ != nullptr; }
  // One complete event on the tensor's row; args is a JSON object body ("" for none).
  void event(const std::string& tensor, const char* name, Clock::time_point begin, Clock::time_point end,
             const std::string& args = "");

 private:
  int row(const std::string& tensor);

  std::FILE* file_ = nullptr;
  int rank_ = 0;
  Clock::time_point origin_;
  std::unordered_map<std::string, int> rows_;
  bool first_ = true;
};

}  // namespace matexcomm
