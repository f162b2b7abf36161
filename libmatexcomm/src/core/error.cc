#include "core/error.h"

#include <cstring>
#include <utility>

namespace matexcomm {

namespace {
std::string basename_of(const char* path) {
  const char* slash = std::strrchr(path, '/');
  return slash != nullptr ? std::string(slash + 1) : std::string(path);
}
}  // namespace

Error::Error(matex_status_t status, std::string message, const char* file, int line)
    : status_(status), message_(std::move(message)) {
  if (file != nullptr) breadcrumb_ = basename_of(file) + ":" + std::to_string(line);
}

}  // namespace matexcomm
