// xla_host_call.cc - the custom-call target through which XLA-compiled code
// (XLA:CPU) runs matex's collectives: at each execution it hands the plan's
// tensors to the engine as one grouped submission, straight from and into
// XLA's buffers, and blocks its thread until all have completed (the engine
// matches and moves them on its own thread, so the wait cannot hold it up).
// Cost: the collective's own, plus one wake-up; no copy except broadcast's
// input into the output buffer and allgather's result out of the request
// (and, beside an allgather, an allreduce of two integers that checks the
// ranks' row counts agree).
// Preconditions: the plan was written by xla_lowerings.cc; every rank runs
// the same compiled function (same names, counts); matex is initialized.
//
// XLA's legacy custom-call ABI (API_VERSION_STATUS_RETURNING_UNIFIED):
// `out` is the result buffer, or for a tuple result an array of its
// elements' buffers; `in` the operands' buffers (one more than the plan's
// tensors when the call is chained to the previous one, xla_lowerings.cc). A failure is reported
// through the status, which XLA turns into the function's error. The setter
// XLA declares for it is not exported by TensorFlow's libraries, so the
// status is set through its definition (custom_call_status_internal.h).
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "runtime.h"
#include "xla/service/custom_call_status_internal.h"
#include "xla/service/custom_call_target_registry.h"
#include "xla_call_plan.h"

namespace matex_tf {

namespace {

void fail(XlaCustomCallStatus* status, const std::string& message) { status->message = message; }

// A request per tensor, freed on every path.
struct Requests {
  std::vector<matex_request_t> slots;
  explicit Requests(size_t n) : slots(n, nullptr) {}
  ~Requests() {
    for (matex_request_t& r : slots) matex_request_free(&r);
  }
};

// The failed tensor's name and why, for the status message: the first
// request (in plan order) that completed with an error.
std::string failure(const XlaCallPlan& plan, const Requests& requests, matex_status_t status) {
  std::string message = matex_last_error();
  std::string name = plan.tensors.front().name;
  for (size_t i = 0; i < plan.tensors.size() && i < requests.slots.size(); ++i) {
    int done = 0;
    if (requests.slots[i] != nullptr && matex_request_test(requests.slots[i], &done) != MATEX_SUCCESS) {
      name = plan.tensors[i].name;
      message = matex_last_error();
      break;
    }
  }
  return "matex (XLA): tensor '" + name + "' failed (status " + std::to_string(static_cast<int>(status)) + "): " +
         message;
}

// Allgather inside XLA has a result shape fixed at compile time (ranks x
// rows), so every rank must give the same rows. Beside each allgather the call
// reduces [rows, -rows] with max: every rank then knows the largest and the
// smallest row count alike, and fails alike when they differ.
struct RowAgreement {
  std::vector<int64_t> extremes;  // 2 per allgather tensor
  std::vector<std::string> names;
};

void add_row_agreement(const XlaCallPlan& plan, RowAgreement* agreement, std::vector<matex_tensor_op_t>* ops) {
  agreement->extremes.resize(2 * plan.tensors.size());
  for (size_t i = 0; i < plan.tensors.size(); ++i) {
    agreement->extremes[2 * i] = static_cast<int64_t>(plan.tensors[i].count);
    agreement->extremes[2 * i + 1] = -static_cast<int64_t>(plan.tensors[i].count);
    agreement->names.push_back(plan.tensors[i].name + "/rows");
  }
  for (size_t i = 0; i < plan.tensors.size(); ++i) {
    matex_tensor_op_t op{};
    op.name = agreement->names[i].c_str();
    op.coll = MATEX_COLL_ALLREDUCE;
    op.sendbuf = MATEX_IN_PLACE;
    op.recvbuf = &agreement->extremes[2 * i];
    op.count = 2;
    op.dtype = MATEX_INT64;
    op.op = MATEX_MAX;
    ops->push_back(op);
  }
}

void run(void* out, const void** in, const char* opaque, size_t opaque_len, XlaCustomCallStatus* status) {
  XlaCallPlan plan;
  if (!plan.decode(std::string(opaque, opaque_len))) return fail(status, "matex (XLA): unreadable call plan");
  matex_engine_t engine = nullptr;
  const absl::Status running = running_engine(&engine);
  if (!running.ok()) return fail(status, "matex (XLA): " + std::string(running.message()));
  const size_t n = plan.tensors.size();
  void** outputs = n == 1 ? &out : static_cast<void**>(out);
  const size_t element = matex_dtype_size(plan.dtype);
  std::vector<matex_tensor_op_t> ops(n);
  for (size_t i = 0; i < n; ++i) {
    const XlaCallPlan::Tensor& t = plan.tensors[i];
    matex_tensor_op_t& op = ops[i];
    op = matex_tensor_op_t{};
    op.name = t.name.c_str();
    op.coll = plan.coll;
    op.count = t.count;
    op.dtype = plan.dtype;
    op.op = plan.op;
    op.root = plan.root;
    op.prescale = plan.prescale;
    op.postscale = plan.postscale;
    if (plan.coll == MATEX_COLL_BROADCAST) {
      std::memcpy(outputs[i], in[i], t.count * element);
      op.recvbuf = outputs[i];
    } else if (plan.coll == MATEX_COLL_ALLGATHER) {
      op.sendbuf = in[i];
      op.row_elements = t.row_elements;
    } else {
      op.sendbuf = in[i];
      op.recvbuf = outputs[i];
    }
  }
  RowAgreement agreement;
  if (plan.coll == MATEX_COLL_ALLGATHER) add_row_agreement(plan, &agreement, &ops);
  Requests requests(ops.size());
  matex_status_t outcome = matex_engine_submit(engine, ops.data(), ops.size(), requests.slots.data());
  if (outcome == MATEX_SUCCESS) outcome = matex_request_wait_all(requests.slots.data(), ops.size());
  if (outcome != MATEX_SUCCESS) return fail(status, failure(plan, requests, outcome));
  if (plan.coll != MATEX_COLL_ALLGATHER) return;
  for (size_t i = 0; i < n; ++i) {
    const XlaCallPlan::Tensor& t = plan.tensors[i];
    const int64_t most = agreement.extremes[2 * i], least = -agreement.extremes[2 * i + 1];
    if (most != least) {
      return fail(status, "matex (XLA): allgather '" + t.name + "': the ranks gave between " + std::to_string(least) +
                              " and " + std::to_string(most) + " rows; inside an XLA-compiled function every rank "
                              "must gather the same first dimension");
    }
    const void* data = nullptr;
    size_t rows = 0;
    outcome = matex_request_output(requests.slots[i], &data, &rows);
    if (outcome != MATEX_SUCCESS) return fail(status, failure(plan, requests, outcome));
    if (rows > 0) std::memcpy(outputs[i], data, rows * t.row_elements * element);
  }
}

}  // namespace

}  // namespace matex_tf

XLA_CPU_REGISTER_CUSTOM_CALL_TARGET_WITH_SYM("matex_xla_host_collective", matex_tf::run);
