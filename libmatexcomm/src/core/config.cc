// config.cc - parsing and validation of the MATEX_* table rows.
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <sstream>

#include "core/config.h"
#include "core/error.h"

namespace matexcomm {

namespace {

std::string trim(const std::string& text) {
  size_t begin = text.find_first_not_of(" \t");
  if (begin == std::string::npos) return "";
  size_t end = text.find_last_not_of(" \t");
  return text.substr(begin, end - begin + 1);
}

bool in_choices(const std::string& value, const std::string& choices) {
  std::stringstream stream(choices);
  std::string choice;
  while (std::getline(stream, choice, '|')) {
    if (choice == value) return true;
  }
  return false;
}

// Bytes as a user would write them (64, 256K, 1G); other numbers with %g.
std::string format_number(const ConfigEntry& entry, double value) {
  if (entry.type == ConfigType::kBytes) {
    const char* suffixes[] = {"", "K", "M", "G"};
    int power = 0;
    while (power < 3 && value >= 1024 && std::fmod(value, 1024) == 0) {
      value /= 1024;
      ++power;
    }
    return std::to_string(static_cast<long long>(value)) + suffixes[power];
  }
  char text[32];
  std::snprintf(text, sizeof text, "%g", value);
  return text;
}

std::string check_range(const ConfigEntry& entry, double value) {
  if (entry.min_value == entry.max_value) return "";
  if (value >= entry.min_value && value <= entry.max_value) return "";
  return "expected a value from " + format_number(entry, entry.min_value) + " to " +
         format_number(entry, entry.max_value);
}

// Returns "" when `value` is valid for `entry`, else what a valid value looks like.
std::string validate(const ConfigEntry& entry, const std::string& value) {
  bool flag = false;
  int64_t integer = 0;
  size_t bytes = 0;
  double seconds = 0;
  switch (entry.type) {
    case ConfigType::kString:
      return "";
    case ConfigType::kBool:
      return parse_bool(value, &flag) ? "" : "expected 0, 1, true, false, yes, no, on or off";
    case ConfigType::kInt:
      if (!parse_int(value, &integer)) return "expected an integer";
      return check_range(entry, static_cast<double>(integer));
    case ConfigType::kBytes:
      if (!parse_bytes(value, &bytes)) return "expected a byte count such as 4096, 64K, 1M or 2G";
      return check_range(entry, static_cast<double>(bytes));
    case ConfigType::kSeconds:
      if (!parse_seconds(value, &seconds)) return "expected a number of seconds";
      return check_range(entry, seconds);
    case ConfigType::kChoice:
      return in_choices(value, entry.choices) ? "" : std::string("expected one of ") + entry.choices;
  }
  return "unknown type";
}

}  // namespace

uint64_t stable_digest(const std::string& text) {
  uint64_t hash = 1469598103934665603ull;  // FNV-1a
  for (unsigned char c : text) {
    hash ^= c;
    hash *= 1099511628211ull;
  }
  return hash == 0 ? 1 : hash;  // 0 is reserved for "invalid"
}

const char* config_type_name(ConfigType type) {
  switch (type) {
    case ConfigType::kString: return "string";
    case ConfigType::kBool: return "bool";
    case ConfigType::kInt: return "integer";
    case ConfigType::kBytes: return "bytes";
    case ConfigType::kSeconds: return "seconds";
    case ConfigType::kChoice: return "choice";
  }
  return "?";
}

bool parse_bool(const std::string& text, bool* out) {
  std::string value = trim(text);
  for (char& c : value) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (value == "1" || value == "true" || value == "yes" || value == "on") {
    *out = true;
    return true;
  }
  if (value == "0" || value == "false" || value == "no" || value == "off") {
    *out = false;
    return true;
  }
  return false;
}

bool parse_int(const std::string& text, int64_t* out) {
  std::string value = trim(text);
  if (value.empty()) return false;
  errno = 0;
  char* end = nullptr;
  long long parsed = std::strtoll(value.c_str(), &end, 10);
  if (errno != 0 || *end != '\0') return false;
  *out = parsed;
  return true;
}

bool parse_bytes(const std::string& text, size_t* out) {
  std::string value = trim(text);
  if (value.empty() || value[0] == '-' || value[0] == '+') return false;
  errno = 0;
  char* end = nullptr;
  unsigned long long parsed = std::strtoull(value.c_str(), &end, 10);
  if (errno != 0 || end == value.c_str()) return false;
  unsigned shift = 0;
  std::string suffix(end);
  if (suffix == "K" || suffix == "k" || suffix == "KiB") shift = 10;
  else if (suffix == "M" || suffix == "m" || suffix == "MiB") shift = 20;
  else if (suffix == "G" || suffix == "g" || suffix == "GiB") shift = 30;
  else if (!suffix.empty() && suffix != "B") return false;
  if (shift > 0 && parsed > (~0ULL >> shift)) return false;
  *out = static_cast<size_t>(parsed << shift);
  return true;
}

bool parse_seconds(const std::string& text, double* out) {
  std::string value = trim(text);
  if (value.empty()) return false;
  errno = 0;
  char* end = nullptr;
  double parsed = std::strtod(value.c_str(), &end);
  if (errno != 0 || *end != '\0' || !std::isfinite(parsed)) return false;
  *out = parsed;
  return true;
}

std::string config_table_markdown() {
  std::ostringstream out;
  out << "| Variable | Type | Default | Same on all ranks | Description |\n";
  out << "|---|---|---|---|---|\n";
  for (const ConfigEntry& entry : config_table()) {
    std::string type = config_type_name(entry.type);
    if (entry.type == ConfigType::kChoice) {
      // A '|' would end the Markdown cell, so list the choices with slashes.
      std::string choices = entry.choices;
      size_t bar = 0;
      while ((bar = choices.find('|')) != std::string::npos) choices.replace(bar, 1, "` / `");
      type += ": `" + choices + "`";
    }
    std::string fallback = entry.default_value[0] ? "`" + std::string(entry.default_value) + "`" : "(empty)";
    if (entry.min_value != entry.max_value) {
      type += " (" + format_number(entry, entry.min_value) + " to " + format_number(entry, entry.max_value) + ")";
    }
    out << "| `" << entry.name << "` | " << type << " | " << fallback << " | "
        << (entry.same_on_all_ranks ? "yes" : "no") << " | " << entry.doc << " |\n";
  }
  return out.str();
}

Config Config::from_environment() {
  Config config;
  for (const ConfigEntry& entry : config_table()) {
    Value value;
    const char* env = std::getenv(entry.name);
    value.from_env = env != nullptr;
    value.text = env != nullptr ? std::string(env) : std::string(entry.default_value);
    if (value.from_env && entry.type != ConfigType::kString) value.text = trim(value.text);
    std::string problem = validate(entry, value.text);
    if (!problem.empty()) {
      MATEX_RAISE(MATEX_ERR_CONFIG, std::string(entry.name) + "=\"" + value.text + "\" is invalid: " + problem);
    }
    config.values_[entry.name] = value;
  }
  return config;
}

const Config::Value& Config::lookup(const char* name) const {
  auto it = values_.find(name);
  if (it == values_.end()) MATEX_RAISE(MATEX_ERR_INTERNAL, std::string("no config row named ") + name);
  return it->second;
}

const std::string& Config::raw(const char* name) const { return lookup(name).text; }
bool Config::is_set(const char* name) const { return lookup(name).from_env; }
std::string Config::get_string(const char* name) const { return lookup(name).text; }

bool Config::get_bool(const char* name) const {
  bool value = false;
  parse_bool(lookup(name).text, &value);
  return value;
}

int64_t Config::get_int(const char* name) const {
  int64_t value = 0;
  parse_int(lookup(name).text, &value);
  return value;
}

size_t Config::get_bytes(const char* name) const {
  size_t value = 0;
  parse_bytes(lookup(name).text, &value);
  return value;
}

double Config::get_seconds(const char* name) const {
  double value = 0;
  parse_seconds(lookup(name).text, &value);
  return value;
}

std::vector<uint64_t> Config::agreement_digests() const {
  std::vector<uint64_t> digests;
  for (const ConfigEntry& entry : config_table()) {
    if (entry.same_on_all_ranks) digests.push_back(stable_digest(lookup(entry.name).text));
  }
  return digests;
}

std::vector<std::string> Config::describe() const {
  std::vector<std::string> lines;
  for (const ConfigEntry& entry : config_table()) {
    const Value& value = lookup(entry.name);
    lines.push_back(std::string(entry.name) + "=" + value.text + (value.from_env ? " (env)" : " (default)"));
  }
  return lines;
}

}  // namespace matexcomm
