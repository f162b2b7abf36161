// argument_checks.h - the checks the communicator's entry points share: byte
// counts that fit the address space, buffers that are present when there is
// data, and counts that fit MPI's int. Each error names the argument.
#pragma once

#include <climits>
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/dtype.h"
#include "core/error.h"

namespace matexcomm {

inline size_t checked_bytes(size_t count, matex_dtype_t dtype, const char* argument) {
  size_t element = dtype_size(dtype);
  if (element != 0 && count > SIZE_MAX / element) {
    MATEX_RAISE(MATEX_ERR_INVALID_ARG, std::string(argument) + " = " + std::to_string(count) + " elements of " +
                                           dtype_name(dtype) + " overflows the address space");
  }
  return count * element;
}

inline void require_buffer(const void* buffer, size_t count, const char* argument) {
  if (buffer == nullptr && count > 0) {
    MATEX_RAISE(MATEX_ERR_INVALID_ARG, std::string(argument) + " is NULL but count is " + std::to_string(count));
  }
}

inline void require_int_count(size_t count, const char* argument) {
  if (count > static_cast<size_t>(INT_MAX)) {
    MATEX_RAISE(MATEX_ERR_UNSUPPORTED, std::string(argument) + " = " + std::to_string(count) +
                                           " exceeds INT_MAX, which this collective does not support yet");
  }
}

}  // namespace matexcomm
