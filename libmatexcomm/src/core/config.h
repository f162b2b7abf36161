// config.h - the one declarative table of every MATEX_* setting, and a
// validated snapshot of the environment taken from it.
//
// Adding a knob = adding one row to kConfigTable in config_table.cc. The docs'
// table (docs/configuration.md) is generated from the same rows
// (`matex-topo --print-config-markdown`) and a unit test checks they agree.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace matexcomm {

enum class ConfigType { kString, kBool, kInt, kBytes, kSeconds, kChoice };

struct ConfigEntry {
  const char* name;           // environment variable, "MATEX_..."
  ConfigType type;
  const char* default_value;  // as a user would write it
  const char* choices;        // "|"-separated for kChoice, else ""
  double min_value;           // numeric types: allowed range; min == max means unbounded
  double max_value;
  bool same_on_all_ranks;     // checked across ranks when a communicator is created
  const char* doc;            // one line
};

const std::vector<ConfigEntry>& config_table();
const char* config_type_name(ConfigType type);

// The table as a Markdown table (the body of docs/configuration.md).
std::string config_table_markdown();

// Values of every table row, read once from the environment and validated.
// Throws Error(MATEX_ERR_CONFIG) naming the variable and quoting its value.
class Config {
 public:
  static Config from_environment();

  const std::string& raw(const char* name) const;  // as given (or default)
  bool is_set(const char* name) const;             // set in the environment
  std::string get_string(const char* name) const;
  bool get_bool(const char* name) const;
  int64_t get_int(const char* name) const;
  size_t get_bytes(const char* name) const;
  double get_seconds(const char* name) const;

  // "NAME=value (default|env)" lines, for --print-config.
  std::vector<std::string> describe() const;

  // One 64-bit digest per same_on_all_ranks row, in table order: ranks whose
  // digests differ disagree on that variable.
  std::vector<uint64_t> agreement_digests() const;

 private:
  struct Value {
    std::string text;
    bool from_env = false;
  };
  const Value& lookup(const char* name) const;
  std::map<std::string, Value> values_;
};

// A digest of `text` that is the same in every process (FNV-1a), never 0.
uint64_t stable_digest(const std::string& text);

// Parsers shared with the table validation (exposed for unit tests).
bool parse_bool(const std::string& text, bool* out);
bool parse_int(const std::string& text, int64_t* out);
bool parse_bytes(const std::string& text, size_t* out);  // "4096", "64K", "1M", "2G"
bool parse_seconds(const std::string& text, double* out);

}  // namespace matexcomm
