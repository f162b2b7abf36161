// json_value.cc - see json_value.h. Cost: linear in the text's length.
#include "core/json_value.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <locale>
#include <sstream>

#include "core/error.h"

namespace matexcomm {

class JsonParser {
 public:
  explicit JsonParser(const std::string& text) : text_(text) {}

  JsonValue document() {
    JsonValue value = parse_value(0);
    skip_space();
    if (at_ < text_.size()) fail("the end of the text");
    return value;
  }

 private:
  [[noreturn]] void fail(const std::string& expected) const {
    throw Error(MATEX_ERR_INVALID_ARG,
                "malformed JSON at byte " + std::to_string(at_) + ": expected " + expected);
  }
  void skip_space() {
    while (at_ < text_.size() && (text_[at_] == ' ' || text_[at_] == '\n' || text_[at_] == '\r' || text_[at_] == '\t'))
      ++at_;
  }
  bool take(char c) {
    skip_space();
    if (at_ < text_.size() && text_[at_] == c) {
      ++at_;
      return true;
    }
    return false;
  }
  void expect(char c) {
    if (!take(c)) fail(std::string("'") + c + "'");
  }
  bool take_word(const char* word) {
    const std::string w(word);
    if (text_.compare(at_, w.size(), w) != 0) return false;
    at_ += w.size();
    return true;
  }

  JsonValue parse_value(int depth) {
    if (depth > JsonValue::kMaxDepth) fail("less nesting");
    skip_space();
    JsonValue value;
    if (at_ >= text_.size()) fail("a value");
    const char c = text_[at_];
    if (c == '{') {
      ++at_;
      value.kind_ = JsonValue::Kind::kObject;
      if (take('}')) return value;
      do {
        skip_space();
        std::string name = parse_string();
        expect(':');
        if (value.object_.count(name) != 0) fail("no repeated member \"" + name + "\"");
        value.object_[name] = parse_value(depth + 1);
      } while (take(','));
      expect('}');
    } else if (c == '[') {
      ++at_;
      value.kind_ = JsonValue::Kind::kArray;
      if (take(']')) return value;
      do {
        value.array_.push_back(parse_value(depth + 1));
      } while (take(','));
      expect(']');
    } else if (c == '"') {
      value.kind_ = JsonValue::Kind::kString;
      value.string_ = parse_string();
    } else if (take_word("true") || take_word("false")) {
      value.kind_ = JsonValue::Kind::kBool;
      value.bool_ = c == 't';
    } else if (take_word("null")) {
      value.kind_ = JsonValue::Kind::kNull;
    } else {
      value.kind_ = JsonValue::Kind::kNumber;
      value.number_ = parse_number();
    }
    return value;
  }

  double parse_number() {
    const size_t start = at_;
    if (at_ < text_.size() && text_[at_] == '-') ++at_;
    const size_t digits = at_;
    while (at_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[at_]))) ++at_;
    if (at_ == digits) fail("a value");
    if (at_ < text_.size() && text_[at_] == '.') {
      ++at_;
      const size_t fraction = at_;
      while (at_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[at_]))) ++at_;
      if (at_ == fraction) fail("digits after '.'");
    }
    if (at_ < text_.size() && (text_[at_] == 'e' || text_[at_] == 'E')) {
      ++at_;
      if (at_ < text_.size() && (text_[at_] == '+' || text_[at_] == '-')) ++at_;
      const size_t exponent = at_;
      while (at_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[at_]))) ++at_;
      if (at_ == exponent) fail("exponent digits");
    }
    // In the C locale whatever the process's LC_NUMERIC: JSON's decimal point is '.'.
    std::istringstream number_text(text_.substr(start, at_ - start));
    number_text.imbue(std::locale::classic());
    double value = 0;
    number_text >> value;
    if (number_text.fail()) fail("a finite number");
    if (!std::isfinite(value)) fail("a finite number");
    return value;
  }

  std::string parse_string() {
    if (at_ >= text_.size() || text_[at_] != '"') fail("a string");
    ++at_;
    std::string out;
    while (true) {
      if (at_ >= text_.size()) fail("a closing '\"'");
      const char c = text_[at_++];
      if (c == '"') return out;
      if (static_cast<unsigned char>(c) < 0x20) fail("no control characters in a string");
      if (c != '\\') {
        out += c;
        continue;
      }
      if (at_ >= text_.size()) fail("an escape");
      const char e = text_[at_++];
      switch (e) {
        case '"': case '\\': case '/': out += e; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          if (at_ + 4 > text_.size()) fail("four hex digits");
          const std::string hex = text_.substr(at_, 4);
          for (char digit : hex) {
            if (!std::isxdigit(static_cast<unsigned char>(digit))) fail("four hex digits");
          }
          const long code = std::strtol(hex.c_str(), nullptr, 16);
          if (code == 0 || code >= 0x80) fail("\\u escape of an ASCII character other than NUL");
          out += static_cast<char>(code);
          at_ += 4;
          break;
        }
        default: fail("a known escape");
      }
    }
  }

  const std::string& text_;
  size_t at_ = 0;
};

JsonValue JsonValue::parse(const std::string& text) { return JsonParser(text).document(); }

namespace {

[[noreturn]] void wrong_kind(const std::string& what, const char* expected) {
  throw Error(MATEX_ERR_INVALID_ARG, what + ": expected " + expected);
}

}  // namespace

double JsonValue::number(const std::string& what) const {
  if (kind_ != Kind::kNumber) wrong_kind(what, "a number");
  return number_;
}

bool JsonValue::boolean(const std::string& what) const {
  if (kind_ != Kind::kBool) wrong_kind(what, "true or false");
  return bool_;
}

const std::string& JsonValue::string(const std::string& what) const {
  if (kind_ != Kind::kString) wrong_kind(what, "a string");
  return string_;
}

const std::vector<JsonValue>& JsonValue::array(const std::string& what) const {
  if (kind_ != Kind::kArray) wrong_kind(what, "an array");
  return array_;
}

const std::map<std::string, JsonValue>& JsonValue::members(const std::string& what) const {
  if (kind_ != Kind::kObject) wrong_kind(what, "an object");
  return object_;
}

const JsonValue* JsonValue::find(const std::string& name) const {
  if (kind_ != Kind::kObject) return nullptr;
  auto found = object_.find(name);
  return found == object_.end() ? nullptr : &found->second;
}

const JsonValue& JsonValue::member(const std::string& name, const std::string& what) const {
  const JsonValue* value = find(name);
  if (value == nullptr) throw Error(MATEX_ERR_INVALID_ARG, what + ": no member \"" + name + "\"");
  return *value;
}

std::string json_quote(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char escaped[8];
          std::snprintf(escaped, sizeof escaped, "\\u%04x", c);
          out += escaped;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

}  // namespace matexcomm
