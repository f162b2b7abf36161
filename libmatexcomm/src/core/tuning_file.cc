// tuning_file.cc - writing, reading and checking tuning files (tuning_file.h).
// Cost: linear in the file's size (a few kilobytes).
#include "core/tuning_file.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "core/error.h"
#include "core/json_value.h"

namespace matexcomm {

namespace {

constexpr const char* kFormat = "matex-tuning";

std::string number(double value) {
  char text[40];
  std::snprintf(text, sizeof text, "%.9g", value);
  return text;
}

std::string cost_json(const AlgorithmCost& cost) {
  std::string text = "{\"alpha_s\": " + number(cost.alpha_seconds) +
                     ", \"beta_s_per_byte\": " + number(cost.beta_seconds_per_byte) + ", \"measured\": [";
  for (size_t i = 0; i < cost.measured.size(); ++i) {
    text += (i ? ", [" : "[") + std::to_string(cost.measured[i].bytes) + ", " + number(cost.measured[i].seconds) + "]";
  }
  return text + "]}";
}

// A whole number in [0, limit] at `what`.
uint64_t whole(const JsonValue& value, double limit, const std::string& what) {
  const double x = value.number(what);
  if (x < 0 || x > limit || x != std::floor(x)) {
    throw Error(MATEX_ERR_INVALID_ARG,
                what + ": expected a whole number from 0 to " + std::to_string(static_cast<uint64_t>(limit)));
  }
  return static_cast<uint64_t>(x);
}

AlgorithmCost parse_cost(const JsonValue& value, const std::string& what) {
  AlgorithmCost cost;
  cost.alpha_seconds = value.member("alpha_s", what).number(what + ".alpha_s");
  cost.beta_seconds_per_byte = value.member("beta_s_per_byte", what).number(what + ".beta_s_per_byte");
  const auto& points = value.member("measured", what).array(what + ".measured");
  for (size_t i = 0; i < points.size(); ++i) {
    const std::string where = what + ".measured[" + std::to_string(i) + "]";
    const auto& pair = points[i].array(where);
    if (pair.size() != 2) throw Error(MATEX_ERR_INVALID_ARG, where + ": expected [bytes, seconds]");
    TimedSize point{whole(pair[0], 0x1p53, where + " bytes"), pair[1].number(where + " seconds")};
    if (point.bytes == 0) throw Error(MATEX_ERR_INVALID_ARG, where + ": expected bytes above 0");
    if (!(point.seconds > 0)) throw Error(MATEX_ERR_INVALID_ARG, where + ": expected seconds above 0");
    if (!cost.measured.empty() && cost.measured.back().bytes >= point.bytes) {
      throw Error(MATEX_ERR_INVALID_ARG, where + ": sizes must grow");
    }
    cost.measured.push_back(point);
  }
  return cost;
}

// "k=v;k=v;..." as pairs, in order.
std::vector<std::pair<std::string, std::string>> fields(const std::string& layout) {
  std::vector<std::pair<std::string, std::string>> out;
  std::stringstream stream(layout);
  std::string item;
  while (std::getline(stream, item, ';')) {
    const size_t eq = item.find('=');
    if (eq == std::string::npos) {
      out.emplace_back(item, "");
    } else {
      out.emplace_back(item.substr(0, eq), item.substr(eq + 1));
    }
  }
  return out;
}

std::string layout_mismatch(const std::string& file, const std::string& here) {
  const auto theirs = fields(file);
  const auto ours = fields(here);
  std::string differences;
  for (const auto& [key, value] : ours) {
    std::string other = "(none)";
    for (const auto& [their_key, their_value] : theirs) {
      if (their_key == key) other = their_value;
    }
    auto shown = [](std::string text) {  // "2,2," reads as 2,2
      while (!text.empty() && text.back() == ',') text.pop_back();
      return text;
    };
    if (other != value) {
      differences += (differences.empty() ? "" : ", ") + key + " " + shown(other) + ", here " + shown(value);
    }
  }
  if (differences.empty()) differences = "\"" + file + "\", here \"" + here + "\"";
  return "measured for another layout (" + differences + ")";
}

}  // namespace

std::string TuningFile::to_json() const {
  std::string text = "{\n  \"format\": " + json_quote(kFormat) + ",\n  \"version\": " + std::to_string(kVersion) +
                     ",\n  \"library\": " + json_quote(identity.library) +
                     ",\n  \"host_kind\": " + json_quote(identity.host_kind) +
                     ",\n  \"layout\": " + json_quote(identity.layout) + ",\n  \"created\": " + json_quote(created) +
                     ",\n  \"ranks\": " + std::to_string(ranks) + ",\n  \"node_sizes\": [";
  for (size_t i = 0; i < node_sizes.size(); ++i) text += (i ? ", " : "") + std::to_string(node_sizes[i]);
  text += "],\n  \"cores_shared\": " + std::string(cores_shared ? "true" : "false") +
          ",\n  \"rounds\": " + std::to_string(rounds) + ",\n  \"collectives\": {";
  bool first_collective = true;
  for (const auto& [collective, algorithms] : collectives) {
    text += std::string(first_collective ? "" : ",") + "\n    " + json_quote(collective) + ": {";
    first_collective = false;
    bool first_algorithm = true;
    for (const auto& [name, cost] : algorithms) {
      text += std::string(first_algorithm ? "" : ",") + "\n      " + json_quote(name) + ": " + cost_json(cost);
      first_algorithm = false;
    }
    text += "\n    }";
  }
  return text + "\n  }\n}\n";
}

TuningFile TuningFile::parse(const std::string& text) {
  const JsonValue root = JsonValue::parse(text);
  const std::string what = "tuning file";
  if (root.member("format", what).string("format") != kFormat) {
    throw Error(MATEX_ERR_INVALID_ARG, "not a tuning file: format is not \"matex-tuning\"");
  }
  const double version = root.member("version", what).number("version");
  if (version != kVersion) {
    throw Error(MATEX_ERR_INVALID_ARG, "tuning file format version " + number(version) + ", this library reads " +
                                           std::to_string(kVersion) + " (run matex-tune again)");
  }
  TuningFile file;
  file.identity.library = root.member("library", what).string("library");
  file.identity.host_kind = root.member("host_kind", what).string("host_kind");
  file.identity.layout = root.member("layout", what).string("layout");
  file.created = root.member("created", what).string("created");
  file.ranks = static_cast<int>(whole(root.member("ranks", what), 1 << 30, "ranks"));
  for (const JsonValue& size : root.member("node_sizes", what).array("node_sizes")) {
    file.node_sizes.push_back(static_cast<int>(whole(size, 1 << 30, "node_sizes[]")));
  }
  file.cores_shared = root.member("cores_shared", what).boolean("cores_shared");
  file.rounds = static_cast<int>(whole(root.member("rounds", what), 1 << 20, "rounds"));
  for (const auto& [collective, algorithms] : root.member("collectives", what).members("collectives")) {
    for (const auto& [name, cost] : algorithms.members("collectives." + collective)) {
      file.collectives[collective][name] = parse_cost(cost, "collectives." + collective + "." + name);
    }
  }
  return file;
}

TuningFile TuningFile::read(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error(MATEX_ERR_INVALID_ARG, "cannot read the tuning file " + path);
  std::stringstream text;
  text << in.rdbuf();
  try {
    return parse(text.str());
  } catch (const Error& e) {
    throw Error(e.status(), "tuning file " + path + ": " + e.message());
  }
}

std::string tuning_mismatch(const TuningIdentity& file, const TuningIdentity& here) {
  std::string why;
  auto add = [&why](const std::string& reason) { why += (why.empty() ? "" : "; ") + reason; };
  if (file.library != here.library) {
    add("stale: written by libmatexcomm " + file.library + ", this is " + here.library);
  }
  if (file.host_kind != here.host_kind) add("another host kind (" + file.host_kind + ", here " + here.host_kind + ")");
  if (file.layout != here.layout) add(layout_mismatch(file.layout, here.layout));
  return why;
}

std::string default_tuning_path() {
  const char* cache = std::getenv("XDG_CACHE_HOME");
  if (cache != nullptr && cache[0] != '\0') return std::string(cache) + "/matex/tuning.json";
  const char* home = std::getenv("HOME");
  return std::string(home != nullptr && home[0] != '\0' ? home : ".") + "/.cache/matex/tuning.json";
}

}  // namespace matexcomm
