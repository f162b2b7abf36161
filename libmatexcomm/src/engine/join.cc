// join.cc - a joined rank's side of the engine.
//
// A rank that has submitted its join (kJoinName) and not yet seen every rank
// join stands in for the tensors the others reduce: rank 0 counts it as having
// announced every name, and each execute response carries the specs it needs.
// It takes part in each such allreduce with a zero buffer of the tensor's size
// (so a sum or an average over all ranks is that of the others' tensors, as
// Horovod defines join), and its cache learns the names as every other rank's
// does, so the bit positions stay the same everywhere. Cost: one zeroed buffer
// per stood-in tensor and cycle, and full negotiations while it waits.
// Precondition: rank 0 sends broadcasts and allgathers that a joined rank has
// not submitted as errors, never as executions.
#include <cstring>

#include "core/dtype.h"
#include "core/error.h"
#include "engine/engine.h"

namespace matexcomm {

TensorOp* Engine::stand_in(const Response& response, size_t index, StandIns* stand_ins) {
  const std::string& name = response.names[index];
  MATEX_REQUIRE(pending_.count(kJoinName) == 1, MATEX_ERR_INTERNAL,
                "engine: response for unknown tensor '" + name + "'");
  MATEX_REQUIRE(index < response.specs.size() && response.kind == TensorKind::kAllreduce, MATEX_ERR_INTERNAL,
                "engine: rank 0 asked a joined rank to stand in for '" + name + "' without an allreduce's spec");
  TensorOp op;
  op.name = name;
  op.spec = response.specs[index];
  stand_ins->zeros.emplace_back(op.spec.count * dtype_size(static_cast<matex_dtype_t>(op.spec.dtype)), '\0');
  op.recv = stand_ins->zeros.back().data();
  op.send = op.recv;  // in place; no request: finish() skips names that are not pending
  stand_ins->ops.push_back(std::move(op));
  return &stand_ins->ops.back();
}

void Engine::finish_join(const Response& response) {
  auto it = pending_.find(kJoinName);
  MATEX_REQUIRE(it != pending_.end() && response.rows.size() == 1, MATEX_ERR_INTERNAL,
                "engine: a join's end reached a rank without its join");
  const int32_t last = static_cast<int32_t>(response.rows[0]);
  if (it->second.state) {
    std::vector<char>& out = it->second.state->output();
    out.resize(sizeof last);
    std::memcpy(out.data(), &last, sizeof last);
    it->second.state->output_rows() = 1;
  }
  finish(kJoinName, MATEX_SUCCESS, "");
}

}  // namespace matexcomm
