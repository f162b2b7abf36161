#include "interposer_settings.h"

#include <unistd.h>

#include <cctype>
#include <climits>
#include <cstdio>
#include <cstring>
#include <mutex>
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

// A kBool row's value, already validated by matex_config_get.
bool is_true(const char* value) {
  std::string text;
  for (const char* c = value != nullptr ? value : ""; *c != '\0'; ++c) {
    if (!std::isspace(static_cast<unsigned char>(*c))) text += *c;
  }
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text == "1" || text == "true" || text == "yes" || text == "on";
}

void warn(const std::string& text) {
  std::fprintf(stderr, "matex interposer: %s\n", text.c_str());
}

Settings read_settings() {
  Settings result;
  const char* mode = nullptr;
  const char* report = nullptr;
  const char* enable = nullptr;
  if (matex_config_get("MATEX_INTERPOSE", &mode) != MATEX_SUCCESS) {
    warn(std::string("passing every call to MPI: ") + matex_last_error());
    return result;
  }
  const std::string mode_text = mode;
  matex_config_get("MATEX_INTERPOSE_REPORT", &report);
  matex_config_get("MATEX_ENABLE", &enable);
  result.report = is_true(report);
  const bool framework_job = is_true(enable) && process_is_python();
  if (mode_text == "off" || (mode_text == "auto" && framework_job)) {
    result.mode = Mode::kOff;
  } else {
    result.mode = mode_text == "all" ? Mode::kAll : Mode::kAuto;
  }
  return result;
}

}  // namespace

const Settings& settings() {
  static std::once_flag once;
  static Settings value;
  std::call_once(once, [] { value = read_settings(); });
  return value;
}

}  // namespace matexinterpose
