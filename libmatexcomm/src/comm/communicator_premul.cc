// communicator_premul.cc - premultiplied sums: this rank's input is scaled by
// its own factor into the output (or a scratch copy), then the ordinary SUM
// allreduce / reduce_scatter runs in place on it. The send buffer is never
// written. Floating dtypes and host buffers only.
#include <cstring>
#include <string>

#include "comm/argument_checks.h"
#include "comm/communicator.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/scaling.h"

namespace matexcomm {

namespace {

void require_floating(matex_dtype_t dtype) {
  require_dtype(dtype, "dtype");
  MATEX_REQUIRE(dtype_is_floating(dtype), MATEX_ERR_INVALID_ARG,
                std::string("dtype = ") + dtype_name(dtype) +
                    " is not a floating dtype; premultiplied sums take float16, bfloat16, float32 or float64");
}

}  // namespace

void Communicator::allreduce_premul_sum(const void* send, void* recv, size_t count, matex_dtype_t dtype,
                                        double factor) {
  require_floating(dtype);
  if (send == MATEX_IN_PLACE) send = recv;
  require_buffer(send, count, "sendbuf");
  require_buffer(recv, count, "recvbuf");
  const size_t bytes = checked_bytes(count, dtype, "count");
  MATEX_REQUIRE(!is_device_memory(send) && !is_device_memory(recv), MATEX_ERR_UNSUPPORTED,
                "matex_allreduce_premul_sum takes host buffers only in this release");
  if (send != recv && bytes > 0) std::memmove(recv, send, bytes);
  scale_elements(dtype, recv, count, factor);
  allreduce(recv, recv, count, dtype, MATEX_SUM);
}

void Communicator::reduce_scatter_premul_sum(const void* send, void* recv, size_t recvcount, matex_dtype_t dtype,
                                             double factor) {
  require_floating(dtype);
  const size_t total = recvcount * static_cast<size_t>(layout_.world_size);
  const size_t bytes = checked_bytes(total, dtype, "recvcount * size");
  require_int_count(recvcount, "recvcount");
  const bool in_place = send == MATEX_IN_PLACE || (send != nullptr && send == recv);
  if (!in_place) require_buffer(send, total, "sendbuf");
  require_buffer(recv, in_place ? total : recvcount, "recvbuf");
  MATEX_REQUIRE((in_place || !is_device_memory(send)) && !is_device_memory(recv), MATEX_ERR_UNSUPPORTED,
                "matex_reduce_scatter_premul_sum takes host buffers only in this release");
  if (in_place) {
    // recvbuf holds the whole input and is the output: scale it where it is.
    scale_elements(dtype, recv, total, factor);
    reduce_scatter(MATEX_IN_PLACE, recv, recvcount, dtype, MATEX_SUM);
    return;
  }
  char* scaled = premul_scratch_.reserve(bytes);
  if (bytes > 0) std::memcpy(scaled, send, bytes);
  scale_elements(dtype, scaled, total, factor);
  reduce_scatter(scaled, recv, recvcount, dtype, MATEX_SUM);
}

}  // namespace matexcomm
