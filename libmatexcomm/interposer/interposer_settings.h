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
  Mode mode = Mode::kAuto;
  // This process takes no part in serving (a bad MATEX_* value, or a Python
  // process that MATEX_ENABLE=1 hands to a framework): it still routes like
  // the others, but refuses every communicator state, so that the agreement
  // in building one sends every rank of it to MPI together.
  bool stand_aside = false;
  bool report = false;  // MATEX_INTERPOSE_REPORT
  size_t min_bytes = 0;  // MATEX_INTERPOSE_MIN_BYTES (auto only)
};

// Reads the settings on first use. Only MATEX_INTERPOSE=off turns the
// interposer off outright (every rank reads the same environment). A bad
// MATEX_* value (warned once) or, under auto, a Python process with
// MATEX_ENABLE=1, where matex's framework integration serves the job, makes
// this process stand aside: a reason of one process must not send it down
// another route than its peers.
const Settings& settings();

}  // namespace matexinterpose
