// interposer_settings.h - the interposer's MATEX_* settings (rows of the
// library's one config table, read through matex_config_get), read once.
#pragma once

#include <cstddef>

namespace matexinterpose {

enum class Mode {
  kOff,   // every call goes to PMPI
  kAuto,  // serve what libmatexcomm would run with its own algorithms
  kAll    // serve every call that qualifies, whatever its size (testing)
};

struct Settings {
  Mode mode = Mode::kOff;
  bool report = false;  // MATEX_INTERPOSE_REPORT
  size_t min_bytes = 0;  // MATEX_INTERPOSE_MIN_BYTES (auto only)
};

// Reads the settings on first use. A bad MATEX_* value turns the interposer
// off with one warning naming it; so does MATEX_INTERPOSE=auto in a Python
// process with MATEX_ENABLE=1, where matex's framework integration serves the
// job and the script's own MPI calls are not ours to take.
const Settings& settings();

}  // namespace matexinterpose
