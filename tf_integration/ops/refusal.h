// refusal.h - a check of this rank's own that fails for a tensor, handed to
// the engine in place of the tensor (matex_engine_submit_refusal), so that
// the other ranks' ops for that name fail too, quoting this rank's reason,
// instead of waiting for data that will never come. The tensor then fails on
// every rank (callback with MATEX_ERR_INVALID_ARG) once all have submitted
// it. Cost: one negotiation round, as for the tensor itself.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "matexcomm/matexcomm.h"

namespace matex_tf {

// MATEX_SUCCESS once the refusal is queued (callback(user_data) runs later
// with the error); otherwise the tensor was not queued and the caller fails
// its op with `why` itself.
inline matex_status_t refuse_on_every_rank(matex_engine_t engine, matex_collective_t coll, const std::string& name,
                                           const absl::Status& why, matex_completion_fn callback,
                                           void* user_data) {
  matex_tensor_op_t op{};
  op.name = name.c_str();
  op.coll = coll;
  op.callback = callback;
  op.user_data = user_data;
  const std::string reason(why.message());
  return matex_engine_submit_refusal(engine, &op, MATEX_ERR_INVALID_ARG, reason.c_str(), nullptr);
}

}  // namespace matex_tf
