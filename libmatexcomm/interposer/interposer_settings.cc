#include "interposer_settings.h"

#include <unistd.h>

#include <climits>
#include <cstdio>
#include <cstring>
#include <string>

#include "matexcomm/matexcomm.h"

namespace matexinterpose {

namespace {

bool process_is_python() {
  char path[PATH_MAX];
  ssize_t length = ::readlink("/proc/self/exe", path, sizeof path - 1);
  if (length <= 0) return false;
  path[length] = '\0';
  const char* slash = std::strrchr(path, '/');
  const char* name = slash != nullptr ? slash + 1 : path;
  return std::strncmp(name, "python", 6) == 0;
}

void warn(const std::string& text) {
  std::fprintf(stderr, "matex interposer: %s\n", text.c_str());
}

// The value of a MATEX_* row (matex_config_get's pointer lasts until its next call).
bool read(const char* name, std::string* value) {
  const char* text = nullptr;
  if (matex_config_get(name, &text) != MATEX_SUCCESS) return false;
  *value = text;
  return true;
}

Settings read_settings() {
  Settings result;
  std::string mode;
  int report = 0;
  int enable = 0;
  if (!read("MATEX_INTERPOSE", &mode) || matex_config_get_bool("MATEX_INTERPOSE_REPORT", &report) != MATEX_SUCCESS ||
      matex_config_get_bool("MATEX_ENABLE", &enable) != MATEX_SUCCESS ||
      matex_config_get_bytes("MATEX_INTERPOSE_MIN_BYTES", &result.min_bytes) != MATEX_SUCCESS) {
    warn(std::string("libmatexcomm serves nothing in this process, MPI runs every collective: ") + matex_last_error());
    result.stand_aside = true;
    // The table's default: this rank cannot know its peers' value, so its route
    // matches theirs only where they keep the default too (docs/mpi-interposer.md).
    result.min_bytes = 0;
    return result;
  }
  result.report = report != 0;
  if (mode == "off") {
    result.mode = Mode::kOff;
  } else {
    result.mode = mode == "all" ? Mode::kAll : Mode::kAuto;
    result.stand_aside = result.mode == Mode::kAuto && enable != 0 && process_is_python();
  }
  return result;
}

}  // namespace

const Settings& settings() {
  static const Settings value = read_settings();  // once, thread-safe
  return value;
}

}  // namespace matexinterpose
