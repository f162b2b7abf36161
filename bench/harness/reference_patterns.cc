// reference_patterns.cc - see reference_patterns.h.
#include "reference_patterns.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "element_codec.h"

namespace matexbench {
namespace {

constexpr size_t kPeriod = 1540;  // 4 * 5 * 7 * 11

size_t phase_of(uint64_t seq) { return static_cast<size_t>((seq * 13) % kPeriod); }

// bool's sum and max are an or, its prod and min an and: on 0/1, max and min.
matex_op_t effective_op(matex_dtype_t dtype, matex_op_t op) {
  if (dtype != MATEX_BOOL) return op;
  if (op == MATEX_SUM || op == MATEX_AVG) return MATEX_MAX;
  if (op == MATEX_PROD) return MATEX_MIN;
  return op;
}

double fold(matex_op_t op, double a, double b) {
  const auto bits = [](double v) { return static_cast<int64_t>(v); };  // the inputs are small integers
  switch (op) {
    case MATEX_PROD: return a * b;
    case MATEX_MIN: return std::min(a, b);
    case MATEX_MAX: return std::max(a, b);
    case MATEX_BAND: return static_cast<double>(bits(a) & bits(b));
    case MATEX_BOR: return static_cast<double>(bits(a) | bits(b));
    case MATEX_BXOR: return static_cast<double>(bits(a) ^ bits(b));
    default: return a + b;  // sum, avg (divided at the end)
  }
}

}  // namespace

ReferencePatterns::ReferencePatterns(matex_dtype_t dtype, matex_op_t op, bool reduces, int world_size)
    : dtype_(dtype),
      op_(reduces ? op : MATEX_SUM),
      world_size_(world_size),
      element_size_(matex_dtype_size(dtype)) {
  inputs_.assign(world_size, std::vector<unsigned char>(2 * kPeriod * element_size_));
  reduced_.assign(2 * kPeriod * element_size_, 0);
  for (size_t k = 0; k < kPeriod; ++k) {
    double acc = input_value(0, k);
    for (int r = 1; r < world_size; ++r) acc = fold(effective_op(dtype, op_), acc, input_value(r, k));
    if (op_ == MATEX_AVG) acc /= world_size;
    for (size_t copy : {k, k + kPeriod}) {
      for (int r = 0; r < world_size; ++r) store_element(dtype, inputs_[r].data(), copy, input_value(r, k));
      store_element(dtype, reduced_.data(), copy, acc);
    }
  }
}

double ReferencePatterns::input_value(int rank, size_t k) const {
  const bool is_signed = dtype_is_signed(dtype_);
  const long r = rank;
  const long kk = static_cast<long>(k);
  if (dtype_ == MATEX_BOOL) return (2 * kk + 3 * r) % 5 < 2 ? 1.0 : 0.0;
  switch (op_) {
    case MATEX_PROD:
      if ((kk + r) % 4 == 0) return 2.0;
      return (is_signed && (3 * kk + r) % 5 == 0) ? -1.0 : 1.0;
    case MATEX_MIN:
    case MATEX_MAX:
      return is_signed ? static_cast<double>((3 * kk + 7 * r) % 11 - 5) : static_cast<double>((3 * kk + 7 * r) % 11);
    case MATEX_AVG:
      return static_cast<double>(kk % 7 - 3) + r - (world_size_ - 1) / 2.0;
    case MATEX_BAND:
    case MATEX_BOR:
    case MATEX_BXOR:  // [-11, 11]: every result stays in [-16, 15], exact in int8
      return is_signed ? static_cast<double>((3 * kk + 5 * r) % 23 - 11) : static_cast<double>((3 * kk + 5 * r) % 23);
    default:
      return is_signed ? static_cast<double>((kk + 3 * r) % 5 - 2) : static_cast<double>((kk + 3 * r) % 4);
  }
}

void ReferencePatterns::fill_input(int rank, uint64_t seq, size_t first, size_t count, void* dst) const {
  fill_from(inputs_[rank], seq, first, count, dst);
}

uint64_t ReferencePatterns::count_wrong_reduced(uint64_t seq, size_t first, size_t count, const void* data) const {
  return compare_with(reduced_, seq, first, count, data);
}

uint64_t ReferencePatterns::count_wrong_input(int rank, uint64_t seq, size_t first, size_t count,
                                              const void* data) const {
  return compare_with(inputs_[rank], seq, first, count, data);
}

void ReferencePatterns::fill_from(const std::vector<unsigned char>& table, uint64_t seq, size_t first,
                                  size_t count, void* dst) const {
  const size_t offset = (first + phase_of(seq)) % kPeriod;
  auto* out = static_cast<unsigned char*>(dst);
  for (size_t done = 0; done < count;) {
    size_t n = std::min(kPeriod, count - done);
    std::memcpy(out + done * element_size_, table.data() + offset * element_size_, n * element_size_);
    done += n;
  }
}

uint64_t ReferencePatterns::compare_with(const std::vector<unsigned char>& table, uint64_t seq, size_t first,
                                         size_t count, const void* data) const {
  const size_t offset = (first + phase_of(seq)) % kPeriod;
  const auto* in = static_cast<const unsigned char*>(data);
  const unsigned char* expected = table.data() + offset * element_size_;
  uint64_t wrong = 0;
  for (size_t done = 0; done < count;) {
    size_t n = std::min(kPeriod, count - done);
    const unsigned char* got = in + done * element_size_;
    if (std::memcmp(got, expected, n * element_size_) != 0) {
      // Compare values, not bits: -0 equals +0, NaN equals nothing.
      for (size_t i = 0; i < n; ++i) wrong += load_element(dtype_, got, i) != load_element(dtype_, expected, i);
    }
    done += n;
  }
  return wrong;
}

}  // namespace matexbench
