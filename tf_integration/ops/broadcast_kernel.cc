// broadcast_kernel.cc - MatexBroadcast: the output starts as a copy of the
// input, and the engine overwrites it with root_rank's on the other ranks.
#include <cstring>

#include "host_kernel_registration.h"
#include "runtime.h"
#include "single_tensor_state.h"

namespace matex_tf {

namespace {

using tensorflow::AsyncOpKernel;

void on_complete(matex_status_t status, const char* message, void* user_data) {
  static_cast<SingleTensorState*>(user_data)->finish(status, message);
}

class BroadcastKernel : public AsyncOpKernel {
 public:
  explicit BroadcastKernel(tensorflow::OpKernelConstruction* c) : AsyncOpKernel(c) {
    std::string name;
    OP_REQUIRES_OK(c, c->GetAttr("root_rank", &root_));
    OP_REQUIRES_OK(c, c->GetAttr("tensor_name", &name));
    name_ = tensor_name_of(name, this->name());
  }

  void ComputeAsync(tensorflow::OpKernelContext* context, DoneCallback done) override {
    matex_engine_t engine = nullptr;
    OP_REQUIRES_OK_ASYNC(context, running_engine(&engine), done);
    const tensorflow::Tensor& input = context->input(0);
    matex_dtype_t dtype;
    OP_REQUIRES_OK_ASYNC(context, dtype_of(input, name_, &dtype), done);
    tensorflow::Tensor* output = nullptr;
    OP_REQUIRES_OK_ASYNC(context, context->allocate_output(0, input.shape(), &output), done);
    const size_t bytes = input.tensor_data().size();
    if (bytes > 0) std::memcpy(const_cast<char*>(output->tensor_data().data()), input.tensor_data().data(), bytes);
    auto* state = new SingleTensorState(context, std::move(done), name_);
    matex_tensor_op_t op{};
    op.name = state->name.c_str();
    op.coll = MATEX_COLL_BROADCAST;
    op.recvbuf = const_cast<char*>(output->tensor_data().data());
    op.count = static_cast<size_t>(input.NumElements());
    op.dtype = dtype;
    op.root = static_cast<int>(root_);
    op.callback = on_complete;
    op.user_data = state;
    const matex_status_t submitted = matex_engine_submit(engine, &op, 1, nullptr);
    if (submitted != MATEX_SUCCESS) state->finish(submitted, matex_last_error());
  }

 private:
  int64_t root_ = 0;
  std::string name_;
};

MATEX_REGISTER_HOST_KERNEL("MatexBroadcast", "tensor", "output", BroadcastKernel);

}  // namespace

}  // namespace matex_tf
