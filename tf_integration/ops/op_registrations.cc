// op_registrations.cc - the interface of matex's TensorFlow ops. They are
// stateful so that TensorFlow never merges two identical collectives or
// folds one away: every rank must run each of them.
#include "tensorflow/core/framework/common_shape_fns.h"
#include "tensorflow/core/framework/op.h"
#include "tensorflow/core/framework/shape_inference.h"

namespace matex_tf {

using tensorflow::shape_inference::InferenceContext;
using tensorflow::shape_inference::ShapeHandle;

REGISTER_OP("MatexAllreduce")
    .Input("tensors: N * T")
    .Output("reduced: N * T")
    .Attr("T: {int8, uint8, int16, uint16, int32, int64, half, bfloat16, float, double}")
    .Attr("N: int >= 1")
    .Attr("reduce_op: {'sum', 'average', 'min', 'max', 'product'} = 'sum'")
    .Attr("prescale: float = 1.0")
    .Attr("postscale: float = 1.0")
    .Attr("tensor_name: string = ''")
    .Attr("process_set_id: int = 0")
    .SetIsStateful()
    .SetShapeFn([](InferenceContext* c) {
      for (int i = 0; i < c->num_inputs(); ++i) c->set_output(i, c->input(i));
      return absl::OkStatus();
    })
    .Doc(R"doc(
Reduces N tensors of one dtype element-wise across all ranks, as one grouped
submission to the matex engine (they may run fused). Every rank must run an
op of the same tensor_name with the same shapes. process_set_id: the process
set whose ranks take part (0: every rank; matex_tf_add_process_set). prescale multiplies the inputs
and postscale the results (floating dtypes only).
)doc");

REGISTER_OP("MatexBroadcast")
    .Input("tensor: T")
    .Output("output: T")
    .Attr("T: {int8, uint8, int16, uint16, int32, int64, half, bfloat16, float, double, bool}")
    .Attr("root_rank: int")
    .Attr("tensor_name: string = ''")
    .Attr("process_set_id: int = 0")
    .SetIsStateful()
    .SetShapeFn(tensorflow::shape_inference::UnchangedShape)
    .Doc(R"doc(
Every rank's output is root_rank's input (root_rank counted within process
set process_set_id, 0: the job).
)doc");

REGISTER_OP("MatexAllgather")
    .Input("tensor: T")
    .Output("output: T")
    .Attr("T: {int8, uint8, int16, uint16, int32, int64, half, bfloat16, float, double, bool}")
    .Attr("tensor_name: string = ''")
    .Attr("process_set_id: int = 0")
    .SetIsStateful()
    .SetShapeFn([](InferenceContext* c) {
      ShapeHandle input = c->input(0);
      if (!c->RankKnown(input) || c->Rank(input) == 0) {  // a scalar fails in the kernel, on every rank
        c->set_output(0, c->UnknownShape());
        return absl::OkStatus();
      }
      ShapeHandle output;
      TF_RETURN_IF_ERROR(c->ReplaceDim(input, 0, c->UnknownDim(), &output));
      c->set_output(0, output);
      return absl::OkStatus();
    })
    .Doc(R"doc(
Concatenates every rank's tensor along the first dimension, in rank order.
The first dimension may differ between ranks; the others must agree.
)doc");

}  // namespace matex_tf
