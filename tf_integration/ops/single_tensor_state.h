// single_tensor_state.h - what a one-tensor collective keeps between its
// submission and the engine's completion callback.
#pragma once

#include <string>
#include <utility>

#include "matexcomm/matexcomm.h"
#include "tensor_conversion.h"
#include "tensorflow/core/framework/op_kernel.h"

namespace matex_tf {

struct SingleTensorState {
  SingleTensorState(tensorflow::OpKernelContext* c, tensorflow::AsyncOpKernel::DoneCallback d, std::string n)
      : context(c), done(std::move(d)), name(std::move(n)) {}
  virtual ~SingleTensorState() = default;
  SingleTensorState(const SingleTensorState&) = delete;
  SingleTensorState& operator=(const SingleTensorState&) = delete;

  tensorflow::OpKernelContext* context;
  tensorflow::AsyncOpKernel::DoneCallback done;
  std::string name;
  tensorflow::Tensor input;         // kept alive while the engine reads it
  matex_request_t request = nullptr;  // allgather: where the result is

  // Sets the op's status, runs `done` and deletes the state.
  void finish(const absl::Status& status) {
    context->SetStatus(status);
    if (request != nullptr) matex_request_free(&request);
    tensorflow::AsyncOpKernel::DoneCallback finished = std::move(done);
    delete this;
    finished();
  }
  void finish(matex_status_t outcome, const char* message) {
    finish(outcome == MATEX_SUCCESS ? absl::OkStatus() : collective_error(outcome, name, message));
  }
};

}  // namespace matex_tf
