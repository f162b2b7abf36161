// phase_clock.h - optional accounting of where an algorithm's time goes, for
// the engine's timeline (MATEX_TIMELINE). Phases of a pipelined algorithm
// interleave round by round, so each phase gets the sum of its pieces.
// With no PhaseTimes attached (the usual case) a PhaseTimer reads no clock.
#pragma once

#include <chrono>

namespace matexcomm {

enum class Phase { kGather = 0, kReduce, kRail, kScatter, kWait };
constexpr int kPhaseCount = 5;
// Timeline names: copy-in (staging or single-copy reads), reduction, MPI across
// nodes, copy-out (result to the outputs), waiting for local peers.
constexpr const char* kPhaseNames[kPhaseCount] = {"copy-in", "reduce", "rail", "copy-out", "wait"};

struct PhaseTimes {
  double seconds[kPhaseCount] = {0, 0, 0, 0, 0};
  void clear() {
    for (double& s : seconds) s = 0;
  }
};

class PhaseTimer {
 public:
  PhaseTimer(PhaseTimes* times, Phase phase) : times_(times), phase_(phase) {
    if (times_ != nullptr) start_ = std::chrono::steady_clock::now();
  }
  ~PhaseTimer() {
    if (times_ == nullptr) return;
    times_->seconds[static_cast<int>(phase_)] +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }
  PhaseTimer(const PhaseTimer&) = delete;
  PhaseTimer& operator=(const PhaseTimer&) = delete;

 private:
  PhaseTimes* times_;
  Phase phase_;
  std::chrono::steady_clock::time_point start_;
};

// A span whose time goes to `rest`, except for the Parts timed inside it.
class PhaseSplit {
 public:
  PhaseSplit(PhaseTimes* times, Phase rest) : times_(times), rest_(rest) {
    if (times_ != nullptr) start_ = std::chrono::steady_clock::now();
  }
  ~PhaseSplit() {
    if (times_ == nullptr) return;
    const double total = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    times_->seconds[static_cast<int>(rest_)] += total - parts_;
  }
  PhaseSplit(const PhaseSplit&) = delete;
  PhaseSplit& operator=(const PhaseSplit&) = delete;

  class Part {
   public:
    Part(PhaseSplit& split, Phase phase) : split_(split), phase_(phase) {
      if (split_.times_ != nullptr) start_ = std::chrono::steady_clock::now();
    }
    ~Part() {  // one clock reading serves the phase and the split
      if (split_.times_ == nullptr) return;
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
      split_.times_->seconds[static_cast<int>(phase_)] += seconds;
      split_.parts_ += seconds;
    }
    Part(const Part&) = delete;
    Part& operator=(const Part&) = delete;

   private:
    PhaseSplit& split_;
    Phase phase_;
    std::chrono::steady_clock::time_point start_;
  };

 private:
  PhaseTimes* times_;
  Phase rest_;
  double parts_ = 0;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace matexcomm
