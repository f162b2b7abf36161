// mpi_baseline.cc - see mpi_baseline.h.
#include "mpi_baseline.h"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "core/half_float.h"  // checked bit for bit against an independent decoding (tests/unit/test_half_float.cc)

namespace matexbench {
namespace {

template <bool kBfloat>
float widen(uint16_t bits) { return kBfloat ? matexcomm::bf16_to_float(bits) : matexcomm::half_to_float(bits); }

template <bool kBfloat>
uint16_t narrow(float value) { return kBfloat ? matexcomm::float_to_bf16(value) : matexcomm::float_to_half(value); }

template <bool kBfloat, int kOp>  // kOp: MATEX_SUM, MATEX_PROD, MATEX_MIN or MATEX_MAX
void half_op(void* in, void* inout, int* len, MPI_Datatype*) {
  const auto* a = static_cast<const uint16_t*>(in);
  auto* b = static_cast<uint16_t*>(inout);
  for (int i = 0; i < *len; ++i) {
    float x = widen<kBfloat>(a[i]);
    float y = widen<kBfloat>(b[i]);
    float z = kOp == MATEX_SUM ? x + y : kOp == MATEX_PROD ? x * y : kOp == MATEX_MIN ? std::min(x, y) : std::max(x, y);
    b[i] = narrow<kBfloat>(z);
  }
}

template <bool kBfloat>
void create_half_ops(MPI_Op* ops) {
  MPI_Op_create(&half_op<kBfloat, MATEX_SUM>, 1, &ops[0]);
  MPI_Op_create(&half_op<kBfloat, MATEX_PROD>, 1, &ops[1]);
  MPI_Op_create(&half_op<kBfloat, MATEX_MIN>, 1, &ops[2]);
  MPI_Op_create(&half_op<kBfloat, MATEX_MAX>, 1, &ops[3]);
}

template <typename T>
void divide(void* data, size_t count, int divisor) {
  auto* values = static_cast<T*>(data);
  for (size_t i = 0; i < count; ++i) values[i] /= static_cast<T>(divisor);
}

template <bool kBfloat>
void divide_half(void* data, size_t count, int divisor) {
  auto* values = static_cast<uint16_t*>(data);
  const float d = static_cast<float>(divisor);
  for (size_t i = 0; i < count; ++i) values[i] = narrow<kBfloat>(widen<kBfloat>(values[i]) / d);
}

void divide_by(matex_dtype_t dtype, void* data, size_t count, int divisor) {
  switch (dtype) {
    case MATEX_FLOAT16: divide_half<false>(data, count, divisor); break;
    case MATEX_BFLOAT16: divide_half<true>(data, count, divisor); break;
    case MATEX_FLOAT32: divide<float>(data, count, divisor); break;
    case MATEX_FLOAT64: divide<double>(data, count, divisor); break;
    default: break;
  }
}

}  // namespace

MPI_Datatype mpi_datatype(matex_dtype_t dtype) {
  switch (dtype) {
    case MATEX_INT8: return MPI_INT8_T;
    case MATEX_UINT8: case MATEX_BOOL: return MPI_UINT8_T;
    case MATEX_INT16: return MPI_INT16_T;
    case MATEX_INT32: return MPI_INT32_T;
    case MATEX_UINT32: return MPI_UINT32_T;
    case MATEX_INT64: return MPI_INT64_T;
    case MATEX_UINT64: return MPI_UINT64_T;
    case MATEX_FLOAT32: return MPI_FLOAT;
    case MATEX_FLOAT64: return MPI_DOUBLE;
    default: return MPI_UINT16_T;  // uint16, float16, bfloat16
  }
}

MpiBaseline::MpiBaseline() {
  create_half_ops<false>(half_ops_[0]);
  create_half_ops<true>(half_ops_[1]);
  MPI_Comm_size(MPI_COMM_WORLD, &world_size_);
}

MpiBaseline::~MpiBaseline() {
  for (auto& row : half_ops_) {
    for (MPI_Op& op : row) MPI_Op_free(&op);
  }
}

MPI_Op MpiBaseline::reduction(matex_dtype_t dtype, matex_op_t op) const {
  switch (op) {  // integer and bool dtypes only
    case MATEX_BAND: return MPI_BAND;
    case MATEX_BOR: return MPI_BOR;
    case MATEX_BXOR: return MPI_BXOR;
    default: break;
  }
  if (dtype == MATEX_BOOL) return op == MATEX_PROD || op == MATEX_MIN ? MPI_MIN : MPI_MAX;  // and, or on 0/1
  const int column = op == MATEX_PROD ? 1 : op == MATEX_MIN ? 2 : op == MATEX_MAX ? 3 : 0;  // avg: sum
  if (dtype == MATEX_FLOAT16 || dtype == MATEX_BFLOAT16) return half_ops_[dtype == MATEX_BFLOAT16][column];
  const MPI_Op builtin[] = {MPI_SUM, MPI_PROD, MPI_MIN, MPI_MAX};
  return builtin[column];
}

int MpiBaseline::int_count(size_t count) {
  if (count > static_cast<size_t>(INT_MAX))
    throw std::runtime_error("--compare mpi: count " + std::to_string(count) + " exceeds MPI's int counts");
  return static_cast<int>(count);
}

void MpiBaseline::finish(const CaseSpec& spec, void* recv) const {
  if (spec.op == MATEX_AVG) divide_by(spec.dtype, recv, spec.count, world_size_);
}

}  // namespace matexbench
