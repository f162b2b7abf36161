// allgather_kernel.cc - MatexAllgather: every rank's rows (first dimension)
// in rank order. The engine learns every rank's row count while matching the
// tensor and allocates the result; the completion callback gives it to
// TensorFlow as the output.
#include <cstring>
#include <vector>

#include "host_kernel_registration.h"
#include "refusal.h"
#include "runtime.h"
#include "single_tensor_state.h"

namespace matex_tf {

namespace {

using tensorflow::AsyncOpKernel;

struct AllgatherState : SingleTensorState {
  using SingleTensorState::SingleTensorState;
  tensorflow::TensorShape row_shape;  // the shape of one row
  std::vector<unsigned char> placeholder;  // rows of zero elements still count: one byte each
};

void on_complete(matex_status_t status, const char* message, void* user_data) {
  auto* state = static_cast<AllgatherState*>(user_data);
  if (status != MATEX_SUCCESS) return state->finish(status, message);
  const void* data = nullptr;
  size_t rows = 0;
  if (matex_request_output(state->request, &data, &rows) != MATEX_SUCCESS) {
    return state->finish(MATEX_ERR_INTERNAL, matex_last_error());
  }
  tensorflow::TensorShape shape = state->row_shape;
  shape.InsertDim(0, static_cast<int64_t>(rows));
  tensorflow::Tensor* output = nullptr;
  absl::Status allocated = state->context->allocate_output(0, shape, &output);
  if (!allocated.ok()) return state->finish(allocated);
  const size_t bytes = output->tensor_data().size();
  if (bytes > 0) std::memcpy(const_cast<char*>(output->tensor_data().data()), data, bytes);
  state->finish(absl::OkStatus());
}

class AllgatherKernel : public AsyncOpKernel {
 public:
  explicit AllgatherKernel(tensorflow::OpKernelConstruction* c) : AsyncOpKernel(c) {
    std::string name;
    OP_REQUIRES_OK(c, c->GetAttr("tensor_name", &name));
    OP_REQUIRES_OK(c, c->GetAttr("process_set_id", &process_set_id_));
    name_ = tensor_name_of(name, this->name());
  }

  void ComputeAsync(tensorflow::OpKernelContext* context, DoneCallback done) override {
    matex_engine_t engine = nullptr;
    OP_REQUIRES_OK_ASYNC(context, running_engine(process_set_id_, &engine, nullptr), done);
    const tensorflow::Tensor& input = context->input(0);
    auto* state = new AllgatherState(context, std::move(done), name_);
    matex_dtype_t dtype = MATEX_UINT8;
    absl::Status usable = input.dims() >= 1 ? dtype_of(input, name_, &dtype)
                                            : absl::InvalidArgumentError("matex: allgather of '" + name_ +
                                                                         "' needs a tensor with a first dimension, "
                                                                         "not a scalar");
    if (!usable.ok()) {  // fails on every rank, quoting why, rather than leave the others waiting
      if (refuse_on_every_rank(engine, MATEX_COLL_ALLGATHER, name_, usable, on_complete, state) != MATEX_SUCCESS) {
        state->finish(usable);
      }
      return;
    }
    state->input = input;
    state->row_shape = input.shape();
    state->row_shape.RemoveDim(0);
    const size_t rows = static_cast<size_t>(input.dim_size(0));
    const size_t row_elements = static_cast<size_t>(state->row_shape.num_elements());
    matex_tensor_op_t op{};
    op.name = state->name.c_str();
    op.coll = MATEX_COLL_ALLGATHER;
    op.sendbuf = input.tensor_data().data();
    op.count = rows;
    op.row_elements = row_elements;
    op.dtype = dtype;
    if (row_elements == 0) {  // nothing to move, but the row counts still add up
      state->placeholder.assign(rows, 0);
      op.sendbuf = state->placeholder.data();
      op.row_elements = 1;
      op.dtype = MATEX_UINT8;
    }
    op.callback = on_complete;
    op.user_data = state;
    // Shapes past the first dimension must agree (rows of zero elements travel as one placeholder byte each,
    // which no shape describes: those go unshaped).
    const Dims dims(input.shape());
    const matex_shape_t shape = dims.shape();
    const matex_status_t submitted = matex_engine_submit_shaped(engine, &op, row_elements == 0 ? nullptr : &shape, 1,
                                                                &state->request);
    if (submitted != MATEX_SUCCESS) state->finish(submitted, matex_last_error());
  }

 private:
  int64_t process_set_id_ = 0;
  std::string name_;
};

MATEX_REGISTER_HOST_KERNEL("MatexAllgather", "tensor", "output", AllgatherKernel);

}  // namespace

}  // namespace matex_tf
