// virtual_nodes.cc - strict parser for MATEX_VIRTUAL_NODES ("3,1", "2,2").
//
// Each comma-separated field is the size of one virtual node made of
// consecutive world ranks. Blanks around a number are tolerated; anything else
// that is not a plain positive decimal integer is rejected with a message that
// names the variable, quotes its value and says which field is wrong.
#include <climits>
#include <cstdint>
#include <string>
#include <vector>

#include "core/error.h"
#include "topology/layout.h"

namespace matexcomm::topo {

namespace {

constexpr const char* kExample =
    "; expected comma-separated positive node sizes such as \"2,2\" or \"3,1\"";

bool is_blank(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}
bool is_digit(char c) { return c >= '0' && c <= '9'; }

std::string without_blanks_around(const std::string& text) {
  size_t begin = 0;
  size_t end = text.size();
  while (begin < end && is_blank(text[begin])) ++begin;
  while (end > begin && is_blank(text[end - 1])) --end;
  return text.substr(begin, end - begin);
}

std::string setting(const std::string& spec) { return "MATEX_VIRTUAL_NODES=\"" + spec + "\": "; }

std::string field_name(int field, const std::string& text) {
  return "field " + std::to_string(field) + " (\"" + text + "\")";
}

bool all_digits(const std::string& text, size_t from) {
  if (from >= text.size()) return false;
  for (size_t i = from; i < text.size(); ++i) {
    if (!is_digit(text[i])) return false;
  }
  return true;
}

// One field, already stripped of surrounding blanks; `field` counts from 1.
int parse_node_size(const std::string& spec, int field, const std::string& text) {
  if (text.empty()) {
    MATEX_RAISE(MATEX_ERR_CONFIG,
                setting(spec) + "field " + std::to_string(field) + " is empty" + kExample);
  }
  if (text[0] == '-' && all_digits(text, 1)) {
    MATEX_RAISE(MATEX_ERR_CONFIG, setting(spec) + field_name(field, text) + " is negative" + kExample);
  }
  if (!all_digits(text, 0)) {
    MATEX_RAISE(MATEX_ERR_CONFIG,
                setting(spec) + field_name(field, text) + " is not a positive integer" + kExample);
  }
  int64_t value = 0;
  for (char c : text) {
    value = value * 10 + (c - '0');
    if (value > INT_MAX) {
      MATEX_RAISE(MATEX_ERR_CONFIG,
                  setting(spec) + field_name(field, text) + " is too large" + kExample);
    }
  }
  if (value == 0) {
    MATEX_RAISE(MATEX_ERR_CONFIG, setting(spec) + field_name(field, text) +
                                      " is zero; every node needs at least one rank");
  }
  return static_cast<int>(value);
}

}  // namespace

std::vector<int> parse_virtual_nodes(const std::string& spec, int world_size) {
  MATEX_REQUIRE(world_size > 0, MATEX_ERR_INVALID_ARG,
                "parse_virtual_nodes: the world size must be positive, got " +
                    std::to_string(world_size));
  std::vector<int> sizes;
  int64_t total = 0;  // at most INT_MAX per field, so no overflow for any real string
  size_t start = 0;
  for (int field = 1;; ++field) {
    size_t comma = spec.find(',', start);
    size_t length = comma == std::string::npos ? std::string::npos : comma - start;
    std::string text = without_blanks_around(spec.substr(start, length));
    sizes.push_back(parse_node_size(spec, field, text));
    total += sizes.back();
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (total != world_size) {
    MATEX_RAISE(MATEX_ERR_CONFIG, setting(spec) + "the sizes add up to " + std::to_string(total) +
                                      " but the job has " + std::to_string(world_size) +
                                      (world_size == 1 ? " rank" : " ranks"));
  }
  return sizes;
}

}  // namespace matexcomm::topo
