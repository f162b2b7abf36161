// error.h - the internal error type of libmatexcomm.
//
// Internal code throws matexcomm::Error; the C API (api/c_api.cc) catches every
// exception and turns it into a matex_status_t plus a thread-local message, so
// nothing ever crosses the C boundary. Messages name the argument or the rank
// at fault. With MATEX_LOG_LEVEL=debug the file:line breadcrumb is appended.
#pragma once

#include <exception>
#include <string>

#include "matexcomm/matexcomm.h"

namespace matexcomm {

class Error : public std::exception {
 public:
  Error(matex_status_t status, std::string message, const char* file = nullptr, int line = 0);
  const char* what() const noexcept override { return message_.c_str(); }
  matex_status_t status() const noexcept { return status_; }
  const std::string& message() const noexcept { return message_; }
  // "file.cc:123", or empty.
  const std::string& breadcrumb() const noexcept { return breadcrumb_; }

 private:
  matex_status_t status_;
  std::string message_;
  std::string breadcrumb_;
};

}  // namespace matexcomm

#define MATEX_RAISE(status, message) throw ::matexcomm::Error((status), (message), __FILE__, __LINE__)

#define MATEX_REQUIRE(condition, status, message) \
  do {                                            \
    if (!(condition)) MATEX_RAISE(status, message); \
  } while (0)
