// broadcast_kernel.cc - MatexBroadcast: the output starts as a copy of the
// input, and the engine overwrites it with root_rank's on the other ranks.
#include <cstring>
#include <string>

#include "host_kernel_registration.h"
#include "refusal.h"
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
    OP_REQUIRES_OK(c, c->GetAttr("process_set_id", &process_set_id_));
    name_ = tensor_name_of(name, this->name());
  }

  void ComputeAsync(tensorflow::OpKernelContext* context, DoneCallback done) override {
    matex_engine_t engine = nullptr;
    int ranks = 0;
    OP_REQUIRES_OK_ASYNC(context, running_engine(process_set_id_, &engine, &ranks), done);
    const tensorflow::Tensor& input = context->input(0);
    auto* state = new SingleTensorState(context, std::move(done), name_);
    matex_dtype_t dtype = MATEX_UINT8;
    absl::Status usable = dtype_of(input, name_, &dtype);
    if (usable.ok() && (root_ < 0 || root_ >= ranks)) {
      usable = absl::InvalidArgumentError("matex: '" + name_ + "': root_rank " + std::to_string(root_) +
                                          " is not a rank of " +
                                          (process_set_id_ == 0 ? std::string("this job")
                                                                : "process set " + std::to_string(process_set_id_)) +
                                          " (0.." + std::to_string(ranks - 1) + ")");
    }
    if (!usable.ok()) {  // fails on every rank, quoting why, rather than leave the others waiting
      if (refuse_on_every_rank(engine, MATEX_COLL_BROADCAST, name_, usable, on_complete, state) != MATEX_SUCCESS) {
        state->finish(usable);
      }
      return;
    }
    tensorflow::Tensor* output = nullptr;
    absl::Status allocated = context->allocate_output(0, input.shape(), &output);
    if (!allocated.ok()) return state->finish(allocated);
    const size_t bytes = input.tensor_data().size();
    if (bytes > 0) std::memcpy(const_cast<char*>(output->tensor_data().data()), input.tensor_data().data(), bytes);
    matex_tensor_op_t op{};
    op.name = state->name.c_str();
    op.coll = MATEX_COLL_BROADCAST;
    op.recvbuf = const_cast<char*>(output->tensor_data().data());
    op.count = static_cast<size_t>(input.NumElements());
    op.dtype = dtype;
    op.root = static_cast<int>(root_);
    op.callback = on_complete;
    op.user_data = state;
    const Dims dims(input.shape());
    const matex_shape_t shape = dims.shape();
    const matex_status_t submitted = matex_engine_submit_shaped(engine, &op, &shape, 1, nullptr);
    if (submitted != MATEX_SUCCESS) state->finish(submitted, matex_last_error());
  }

 private:
  int64_t process_set_id_ = 0;
  int64_t root_ = 0;
  std::string name_;
};

MATEX_REGISTER_HOST_KERNEL("MatexBroadcast", "tensor", "output", BroadcastKernel);

}  // namespace

}  // namespace matex_tf
