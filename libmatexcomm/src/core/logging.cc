#include "core/logging.h"

#include <atomic>
#include <cstdio>

namespace matexcomm {

namespace {
std::atomic<int> g_level{static_cast<int>(LogLevel::kWarn)};
std::atomic<int> g_rank{-1};
const char* const kNames[] = {"error", "warn", "info", "debug"};
}  // namespace

void set_log_level(const std::string& name) {
  for (int i = 0; i < 4; ++i) {
    if (name == kNames[i]) g_level.store(i);
  }
}

LogLevel log_level() { return static_cast<LogLevel>(g_level.load(std::memory_order_relaxed)); }

void set_log_rank(int rank) { g_rank.store(rank); }

void log_message(LogLevel level, const std::string& message) {
  std::fprintf(stderr, "[matex %s rank %d] %s\n", kNames[static_cast<int>(level)], g_rank.load(), message.c_str());
}

}  // namespace matexcomm
