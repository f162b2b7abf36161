// allreduce_kernel.cc - MatexAllreduce: N tensors handed to the engine in one
// grouped submission; TensorFlow's `done` runs from the engine's completion
// callback once all N have completed.
#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "host_kernel_registration.h"
#include "refusal.h"
#include "runtime.h"
#include "tensor_conversion.h"
#include "tensorflow/core/framework/op_kernel.h"

namespace matex_tf {

namespace {

using tensorflow::AsyncOpKernel;
using tensorflow::OpKernelConstruction;
using tensorflow::OpKernelContext;

// What the callbacks of one op's tensors share: the first error and a countdown.
struct Group {
  Group(OpKernelContext* c, AsyncOpKernel::DoneCallback d, int n) : context(c), done(std::move(d)), remaining(n) {}

  OpKernelContext* context;
  AsyncOpKernel::DoneCallback done;
  std::vector<std::string> names;
  std::vector<tensorflow::Tensor> inputs;  // kept alive until the engine is done with them
  std::atomic<int> remaining;
  std::mutex mutex;
  absl::Status status;

  void finish_one(int index, matex_status_t outcome, const char* message) {
    if (outcome != MATEX_SUCCESS) {
      std::lock_guard<std::mutex> lock(mutex);
      if (status.ok()) status = collective_error(outcome, names[index], message);
    }
    if (remaining.fetch_sub(1) == 1) {
      context->SetStatus(status);
      AsyncOpKernel::DoneCallback finish = std::move(done);
      delete this;
      finish();
    }
  }
  // Fails the op before anything was queued.
  void abandon(const absl::Status& why) {
    context->SetStatus(why);
    AsyncOpKernel::DoneCallback finish = std::move(done);
    delete this;
    finish();
  }
};

struct Slot {
  Group* group;
  int index;
};

void on_complete(matex_status_t status, const char* message, void* user_data) {
  std::unique_ptr<Slot> slot(static_cast<Slot*>(user_data));
  slot->group->finish_one(slot->index, status, message);
}

class AllreduceKernel : public AsyncOpKernel {
 public:
  explicit AllreduceKernel(OpKernelConstruction* c) : AsyncOpKernel(c) {
    std::string reduce_op, name;
    OP_REQUIRES_OK(c, c->GetAttr("reduce_op", &reduce_op));
    OP_REQUIRES_OK(c, c->GetAttr("prescale", &prescale_));
    OP_REQUIRES_OK(c, c->GetAttr("postscale", &postscale_));
    OP_REQUIRES_OK(c, c->GetAttr("tensor_name", &name));
    OP_REQUIRES_OK(c, c->GetAttr("process_set_id", &process_set_id_));
    OP_REQUIRES(c, to_matex_op(reduce_op, &op_), absl::InvalidArgumentError("matex: unknown reduce_op " + reduce_op));
    base_name_ = tensor_name_of(name, this->name());
  }

  void ComputeAsync(OpKernelContext* context, DoneCallback done) override {
    matex_engine_t engine = nullptr;
    OP_REQUIRES_OK_ASYNC(context, running_engine(process_set_id_, &engine, nullptr), done);
    const int n = context->num_inputs();
    auto* group = new Group(context, std::move(done), n);
    for (int i = 0; i < n; ++i) group->names.push_back(n == 1 ? base_name_ : base_name_ + "/" + std::to_string(i));
    matex_dtype_t dtype = MATEX_FLOAT32;
    absl::Status usable = dtype_of(context->input(0), base_name_, &dtype);
    if (usable.ok()) usable = check_scaling(dtype, op_, prescale_, postscale_, base_name_);
    if (!usable.ok()) return refuse(engine, group, usable);
    std::vector<matex_tensor_op_t> ops(n);
    for (int i = 0; i < n; ++i) {
      const tensorflow::Tensor& input = context->input(i);
      tensorflow::Tensor* output = nullptr;
      absl::Status allocated = context->allocate_output(i, input.shape(), &output);
      if (!allocated.ok()) return group->abandon(allocated);
      group->inputs.push_back(input);
      matex_tensor_op_t& op = ops[i];
      op = matex_tensor_op_t{};
      op.coll = MATEX_COLL_ALLREDUCE;
      op.sendbuf = input.tensor_data().data();
      op.recvbuf = const_cast<char*>(output->tensor_data().data());
      op.count = static_cast<size_t>(input.NumElements());
      op.dtype = dtype;
      op.op = op_;
      op.prescale = prescale_;
      op.postscale = postscale_;
      op.callback = on_complete;
    }
    for (int i = 0; i < n; ++i) {
      ops[i].name = group->names[i].c_str();
      ops[i].user_data = new Slot{group, i};
    }
    std::vector<Dims> dims;
    std::vector<matex_shape_t> shapes;
    dims.reserve(n);
    for (int i = 0; i < n; ++i) shapes.push_back(dims.emplace_back(context->input(i).shape()).shape());
    const matex_status_t submitted = matex_engine_submit_shaped(engine, ops.data(), shapes.data(), ops.size(), nullptr);
    if (submitted != MATEX_SUCCESS) {
      const std::string message = matex_last_error();
      for (matex_tensor_op_t& op : ops) delete static_cast<Slot*>(op.user_data);
      group->abandon(collective_error(submitted, base_name_, message.c_str()));
    }
  }

 private:
  int64_t process_set_id_ = 0;
  // This rank cannot serve the op (a dtype, an average of integers): every
  // tensor of it fails on every rank, quoting why, rather than leave the
  // other ranks waiting for it.
  static void refuse(matex_engine_t engine, Group* group, const absl::Status& why) {
    const std::string reason(why.message());
    const int n = static_cast<int>(group->names.size());
    for (int i = 0; i < n; ++i) {
      auto* slot = new Slot{group, i};
      if (refuse_on_every_rank(engine, MATEX_COLL_ALLREDUCE, group->names[i], why, on_complete, slot) !=
          MATEX_SUCCESS) {
        delete slot;
        group->finish_one(i, MATEX_ERR_INVALID_ARG, reason.c_str());
      }
    }
  }

  matex_op_t op_ = MATEX_SUM;
  float prescale_ = 1.0f;
  float postscale_ = 1.0f;
  std::string base_name_;
};

MATEX_REGISTER_HOST_KERNEL("MatexAllreduce", "tensors", "reduced", AllreduceKernel);

}  // namespace

}  // namespace matex_tf
