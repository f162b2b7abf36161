// json_value.h - a small JSON reader and the quoting that writing JSON needs.
//
// Enough for the library's own files (the tuning file): objects, arrays,
// strings (escapes \" \\ \/ \b \f \n \r \t and \uXXXX below U+0080), numbers,
// true, false and null. Parsing is one pass over the text, linear in its
// length; nesting is limited to kMaxDepth. A malformed text throws
// Error(MATEX_ERR_INVALID_ARG) naming the byte offset and what was expected.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace matexcomm {

class JsonValue {
 public:
  enum class Kind { kNull, kBool, kNumber, kString, kArray, kObject };
  static constexpr int kMaxDepth = 64;

  static JsonValue parse(const std::string& text);

  Kind kind() const { return kind_; }
  bool is(Kind kind) const { return kind_ == kind; }
  // Each accessor throws Error(MATEX_ERR_INVALID_ARG) naming `what` when the
  // value is of another kind (or the member is missing).
  double number(const std::string& what) const;
  bool boolean(const std::string& what) const;
  const std::string& string(const std::string& what) const;
  const std::vector<JsonValue>& array(const std::string& what) const;
  const JsonValue& member(const std::string& name, const std::string& what) const;
  const JsonValue* find(const std::string& name) const;  // null when absent or not an object
  const std::map<std::string, JsonValue>& members(const std::string& what) const;

 private:
  friend class JsonParser;
  Kind kind_ = Kind::kNull;
  bool bool_ = false;
  double number_ = 0;
  std::string string_;
  std::vector<JsonValue> array_;
  std::map<std::string, JsonValue> object_;
};

// `text` as a JSON string literal, quotes included.
std::string json_quote(const std::string& text);

}  // namespace matexcomm
