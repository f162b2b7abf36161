#include "engine/timeline.h"

#include <cerrno>
#include <cstring>

#include "core/logging.h"

namespace matexcomm {

namespace {

std::string json_escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char code[8];
      std::snprintf(code, sizeof code, "\\u%04x", static_cast<unsigned char>(c));
      out += code;
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

Timeline::Timeline(const std::string& path, int rank) : rank_(rank), origin_(Clock::now()) {
  if (path.empty()) return;
  std::string target = path;
  const size_t marker = target.find("%r");
  if (marker != std::string::npos) {
    target.replace(marker, 2, std::to_string(rank));
  } else if (rank != 0) {
    return;
  }
  file_ = std::fopen(target.c_str(), "w");
  if (file_ == nullptr) {
    MATEX_LOG(LogLevel::kWarn, "MATEX_TIMELINE: cannot write " + target + ": " + std::strerror(errno) +
                                   "; no timeline");
    return;
  }
  std::fprintf(file_, "[\n");
}

Timeline::~Timeline() {
  if (file_ == nullptr) return;
  std::fprintf(file_, "\n]\n");
  std::fclose(file_);
}

int Timeline::row(const std::string& tensor) {
  auto [it, fresh] = rows_.try_emplace(tensor, static_cast<int>(rows_.size()) + 1);
  if (fresh) {  // name the row after the tensor
    std::fprintf(file_, "%s{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": %d, \"tid\": %d, "
                        "\"args\": {\"name\": \"%s\"}}",
                 first_ ? "" : ",\n", rank_, it->second, json_escape(tensor).c_str());
    first_ = false;
  }
  return it->second;
}

void Timeline::event(const std::string& tensor, const char* name, Clock::time_point begin, Clock::time_point end,
                     const std::string& args) {
  if (file_ == nullptr) return;
  const int tid = row(tensor);
  const double ts = std::chrono::duration<double, std::micro>(begin - origin_).count();
  const double dur = std::chrono::duration<double, std::micro>(end - begin).count();
  std::fprintf(file_, ",\n{\"name\": \"%s\", \"cat\": \"engine\", \"ph\": \"X\", \"pid\": %d, \"tid\": %d, "
                      "\"ts\": %.3f, \"dur\": %.3f, \"args\": {%s}}",
               name, rank_, tid, ts, dur, args.c_str());
}

}  // namespace matexcomm
