// c_api_engine.cc - the extern "C" surface of the asynchronous engine. Like
// communicators, engine handles are checked against a registry before use
// (api/handle_registry.h); requests are plain heap objects owned by the
// caller until matex_request_free.
#include <algorithm>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "api/c_api_support.h"
#include "api/handle_registry.h"
#include "comm/communicator.h"
#include "engine/engine.h"
#include "matexcomm/matexcomm.h"

struct matex_request_s {
  std::shared_ptr<matexcomm::RequestState> state;
};

using matexcomm::capi::g_last_error;
using matexcomm::capi::guarded;
using matexcomm::capi::require_out;

namespace {

using EngineRegistry = matexcomm::capi::HandleRegistry<matex_engine_t, matexcomm::Engine, 2>;

matexcomm::Engine& live_engine(matex_engine_t engine) {
  MATEX_REQUIRE(engine != nullptr, MATEX_ERR_NOT_INITIALIZED, "engine is NULL: call matex_engine_create first");
  EngineRegistry::State state;
  const std::shared_ptr<matexcomm::Engine> found = EngineRegistry::instance().find(engine, &state);
  MATEX_REQUIRE(state != EngineRegistry::State::kReleased, MATEX_ERR_NOT_INITIALIZED, "engine was already destroyed");
  MATEX_REQUIRE(found != nullptr, MATEX_ERR_NOT_INITIALIZED, "engine is not an engine made by matex_engine_create");
  return *found;
}

double factor_or_one(double factor) { return factor == 0.0 ? 1.0 : factor; }

matexcomm::TensorOp convert(const matex_tensor_op_t& in, size_t index) {
  matexcomm::TensorOp op;
  MATEX_REQUIRE(in.name != nullptr, MATEX_ERR_INVALID_ARG, "ops[" + std::to_string(index) + "].name is NULL");
  op.name = in.name;
  op.spec.dtype = in.dtype;
  op.spec.count = in.count;
  switch (in.coll) {
    case MATEX_COLL_ALLREDUCE:
      op.spec.kind = matexcomm::TensorKind::kAllreduce;
      op.spec.op = in.op;
      op.recv = in.recvbuf;
      op.send = in.sendbuf == MATEX_IN_PLACE ? in.recvbuf : in.sendbuf;
      op.prescale = factor_or_one(in.prescale);
      op.postscale = factor_or_one(in.postscale);
      break;
    case MATEX_COLL_BROADCAST:
      op.spec.kind = matexcomm::TensorKind::kBroadcast;
      op.spec.root = in.root;
      op.recv = in.recvbuf;
      break;
    case MATEX_COLL_ALLGATHER:
      op.spec.kind = matexcomm::TensorKind::kAllgather;
      op.spec.row_elements = in.row_elements == 0 ? 1 : in.row_elements;
      op.send = in.sendbuf;
      break;
    default:
      MATEX_RAISE(MATEX_ERR_INVALID_ARG, "tensor '" + op.name + "': coll " + std::to_string(in.coll) +
                                             " is not available in the engine (allreduce, broadcast, allgather)");
  }
  op.state = std::make_shared<matexcomm::RequestState>(in.callback, in.user_data);
  return op;
}

std::vector<int64_t> shape_of(const matex_shape_t& shape, size_t index) {
  const std::string what = "shapes[" + std::to_string(index) + "]";
  MATEX_REQUIRE(shape.ndim == 0 || shape.dims != nullptr, MATEX_ERR_INVALID_ARG, what + ".dims is NULL");
  MATEX_REQUIRE(shape.ndim <= 64, MATEX_ERR_INVALID_ARG, what + ".ndim " + std::to_string(shape.ndim) +
                                                            " is more than 64 dimensions");
  return std::vector<int64_t>(shape.dims, shape.dims + shape.ndim);
}

}  // namespace

extern "C" {

matex_status_t matex_engine_create(matex_comm_t comm, matex_engine_t* engine) {
  return guarded([&] {
    require_out(engine, "engine");
    *engine = nullptr;
    auto impl = std::make_shared<matexcomm::Engine>(matexcomm::capi::live_comm(comm).mpi_comm());
    *engine = EngineRegistry::instance().add(std::move(impl));
  });
}

matex_status_t matex_engine_destroy(matex_engine_t* engine) {
  return guarded([&] {
    require_out(engine, "engine");
    live_engine(*engine);
    // The handle is dead from here on; the engine ends below (joining its thread, collective).
    std::shared_ptr<matexcomm::Engine> owned = EngineRegistry::instance().release(*engine);
    owned.reset();
    *engine = nullptr;
  });
}

matex_status_t matex_engine_submit(matex_engine_t engine, const matex_tensor_op_t* ops, size_t n,
                                   matex_request_t* requests) {
  return matex_engine_submit_shaped(engine, ops, nullptr, n, requests);
}

matex_status_t matex_engine_submit_shaped(matex_engine_t engine, const matex_tensor_op_t* ops,
                                          const matex_shape_t* shapes, size_t n, matex_request_t* requests) {
  return guarded([&] {
    matexcomm::Engine& impl = live_engine(engine);
    MATEX_REQUIRE(n == 0 || ops != nullptr, MATEX_ERR_INVALID_ARG, "ops is NULL");
    if (requests != nullptr) std::fill(requests, requests + n, nullptr);  // what a refusal leaves
    std::vector<matexcomm::TensorOp> converted;
    converted.reserve(n);
    for (size_t i = 0; i < n; ++i) {
      converted.push_back(convert(ops[i], i));
      if (shapes != nullptr) converted.back().spec.shape = shape_of(shapes[i], i);
    }
    std::vector<std::unique_ptr<matex_request_s>> handles;
    if (requests != nullptr) {
      for (const auto& op : converted) handles.push_back(std::make_unique<matex_request_s>(matex_request_s{op.state}));
    }
    // The slots are filled before anything is queued, so that a completion
    // callback may already read them; a refused submission empties them again.
    for (size_t i = 0; i < handles.size(); ++i) requests[i] = handles[i].get();
    try {
      impl.submit(std::move(converted));  // throws without queuing anything
    } catch (...) {
      for (size_t i = 0; i < handles.size(); ++i) requests[i] = nullptr;
      throw;
    }
    for (auto& handle : handles) handle.release();
  });
}

matex_status_t matex_engine_submit_join(matex_engine_t engine, matex_request_t* request) {
  return guarded([&] {
    matexcomm::Engine& impl = live_engine(engine);
    require_out(request, "request");
    *request = nullptr;
    matexcomm::TensorOp join;
    join.name = matexcomm::kJoinName;
    join.spec.kind = matexcomm::TensorKind::kJoin;
    join.state = std::make_shared<matexcomm::RequestState>(nullptr, nullptr);
    auto handle = std::make_unique<matex_request_s>(matex_request_s{join.state});
    std::vector<matexcomm::TensorOp> one;
    one.push_back(std::move(join));
    impl.submit(std::move(one));
    *request = handle.release();
  });
}

matex_status_t matex_engine_submit_refusal(matex_engine_t engine, const matex_tensor_op_t* op, matex_status_t status,
                                           const char* reason, matex_request_t* request) {
  return guarded([&] {
    matexcomm::Engine& impl = live_engine(engine);
    if (request != nullptr) *request = nullptr;
    MATEX_REQUIRE(op != nullptr, MATEX_ERR_INVALID_ARG, "op is NULL");
    MATEX_REQUIRE(status != MATEX_SUCCESS, MATEX_ERR_INVALID_ARG,
                  "status is MATEX_SUCCESS: a refusal carries the error the tensor fails with");
    MATEX_REQUIRE(reason != nullptr && reason[0] != '\0', MATEX_ERR_INVALID_ARG, "reason is NULL or empty");
    matex_tensor_op_t described = *op;  // only the name, kind and callback count
    described.sendbuf = nullptr;
    described.recvbuf = nullptr;
    described.count = 0;
    matexcomm::TensorOp converted = convert(described, 0);
    converted.refusal_status = status;
    converted.refusal = reason;
    std::unique_ptr<matex_request_s> handle;
    if (request != nullptr) {
      handle = std::make_unique<matex_request_s>(matex_request_s{converted.state});
      *request = handle.get();  // before queuing, as matex_engine_submit does
    }
    std::vector<matexcomm::TensorOp> one;
    one.push_back(std::move(converted));
    try {
      impl.submit(std::move(one));
    } catch (...) {
      if (request != nullptr) *request = nullptr;
      throw;
    }
    handle.release();
  });
}

matex_status_t matex_engine_stats(matex_engine_t engine, matex_engine_stats_t* stats) {
  return guarded([&] {
    require_out(stats, "stats");
    const matexcomm::EngineStats s = live_engine(engine).stats();
    stats->cycles = s.cycles;
    stats->cached_cycles = s.cached_cycles;
    stats->full_cycles = s.full_cycles;
    stats->idle_cycles = s.idle_cycles;
    stats->idle_coordination_us = s.idle_coordination_seconds * 1e6;
    stats->fused_responses = s.fused_responses;
    stats->tensors = s.tensors;
  });
}

matex_status_t matex_engine_stats_reset(matex_engine_t engine) {
  return guarded([&] { live_engine(engine).reset_stats(); });
}

matex_status_t matex_request_wait(matex_request_t request) {
  matex_status_t outcome = MATEX_SUCCESS;
  const matex_status_t status = guarded([&] {
    MATEX_REQUIRE(request != nullptr && request->state, MATEX_ERR_INVALID_ARG, "request is NULL");
    std::string message;
    outcome = request->state->wait(&message);
    if (outcome != MATEX_SUCCESS) g_last_error = message;
  });
  return status != MATEX_SUCCESS ? status : outcome;
}

matex_status_t matex_request_wait_all(matex_request_t* requests, size_t n) {
  matex_status_t outcome = MATEX_SUCCESS;
  const matex_status_t status = guarded([&] {
    MATEX_REQUIRE(requests != nullptr || n == 0, MATEX_ERR_INVALID_ARG, "requests is NULL");
    for (size_t i = 0; i < n; ++i) {
      MATEX_REQUIRE(requests[i] == nullptr || requests[i]->state, MATEX_ERR_INVALID_ARG,
                    "requests[" + std::to_string(i) + "] is not a request");
    }
    // One latch for all: the waiter sleeps once instead of once per request.
    auto latch = std::make_shared<matexcomm::CompletionLatch>(n + 1);
    size_t already_done = 1;  // the extra count, dropped below, keeps it from reaching 0 early
    for (size_t i = 0; i < n; ++i) {
      if (requests[i] == nullptr || !requests[i]->state->count_down_when_done(latch)) ++already_done;
    }
    latch->count_down(already_done);
    latch->wait();
    for (size_t i = 0; i < n && outcome == MATEX_SUCCESS; ++i) {
      if (requests[i] == nullptr) continue;
      std::string message;
      outcome = requests[i]->state->wait(&message);
      if (outcome != MATEX_SUCCESS) g_last_error = "requests[" + std::to_string(i) + "]: " + message;
    }
  });
  return status != MATEX_SUCCESS ? status : outcome;
}

matex_status_t matex_request_test(matex_request_t request, int* done) {
  matex_status_t outcome = MATEX_SUCCESS;
  const matex_status_t status = guarded([&] {
    require_out(done, "done");
    MATEX_REQUIRE(request != nullptr && request->state, MATEX_ERR_INVALID_ARG, "request is NULL");
    std::string message;
    *done = request->state->test(&outcome, &message) ? 1 : 0;
    if (outcome != MATEX_SUCCESS) g_last_error = message;
  });
  return status != MATEX_SUCCESS ? status : outcome;
}

matex_status_t matex_request_output(matex_request_t request, const void** data, size_t* rows) {
  return guarded([&] {
    require_out(data, "data");
    require_out(rows, "rows");
    MATEX_REQUIRE(request != nullptr && request->state, MATEX_ERR_INVALID_ARG, "request is NULL");
    MATEX_REQUIRE(request->state->succeeded(), MATEX_ERR_INVALID_ARG,
                  "the request has not completed, or it failed: no output");
    *data = request->state->output().data();
    *rows = request->state->output_rows();
  });
}

matex_status_t matex_request_free(matex_request_t* request) {
  return guarded([&] {
    require_out(request, "request");
    delete *request;
    *request = nullptr;
  });
}

}  // extern "C"
