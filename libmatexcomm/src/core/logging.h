// logging.h - minimal leveled logging to stderr, prefixed with the world rank.
#pragma once

#include <string>

namespace matexcomm {

enum class LogLevel { kError = 0, kWarn = 1, kInfo = 2, kDebug = 3 };

// Set once from MATEX_LOG_LEVEL when a communicator is created.
void set_log_level(const std::string& name);
LogLevel log_level();
void set_log_rank(int rank);
void log_message(LogLevel level, const std::string& message);

}  // namespace matexcomm

#define MATEX_LOG(level, message)                                                     \
  do {                                                                                \
    if (static_cast<int>(level) <= static_cast<int>(::matexcomm::log_level()))        \
      ::matexcomm::log_message((level), (message));                                   \
  } while (0)
