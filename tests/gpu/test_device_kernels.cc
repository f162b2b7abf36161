// test_device_kernels.cc - the CUDA kernels of gpu/device_kernels.h against
// host references written here, over edge counts, misaligned pointers and
// batches of several launches. Every element of every buffer is checked (what
// lies around the destinations must stay untouched), bit for bit.
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <iterator>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"
#include "core/half_float.h"
#include "gpu/cuda_check.h"
#include "gpu/cuda_resources.h"
#include "gpu/device_kernels.h"

namespace matexcomm::gpu {
namespace {

const matex_dtype_t kAllDtypes[] = {MATEX_INT8,   MATEX_UINT8,   MATEX_INT16,  MATEX_UINT16, MATEX_INT32,
                                    MATEX_UINT32, MATEX_INT64,   MATEX_UINT64, MATEX_BOOL,   MATEX_FLOAT16,
                                    MATEX_BFLOAT16, MATEX_FLOAT32, MATEX_FLOAT64};
const matex_dtype_t kFloatingDtypes[] = {MATEX_FLOAT16, MATEX_BFLOAT16, MATEX_FLOAT32, MATEX_FLOAT64};
const matex_op_t kAllOps[] = {MATEX_SUM, MATEX_PROD, MATEX_MIN, MATEX_MAX, MATEX_AVG, MATEX_BAND, MATEX_BOR, MATEX_BXOR};

bool is_signed_integer(matex_dtype_t d) {
  return d == MATEX_INT8 || d == MATEX_INT16 || d == MATEX_INT32 || d == MATEX_INT64;
}

// The pairs launch_reduce serves: bitwise ops on integers and bool only.
std::vector<std::tuple<matex_dtype_t, matex_op_t>> valid_pairs() {
  std::vector<std::tuple<matex_dtype_t, matex_op_t>> pairs;
  for (matex_dtype_t dtype : kAllDtypes) {
    for (matex_op_t op : kAllOps) {
      if (!dtype_is_floating(dtype) || !op_is_bitwise(op)) pairs.emplace_back(dtype, op);
    }
  }
  return pairs;
}
const size_t kEdgeCounts[] = {0, 1, 7, 31, 1000003};

DeviceBuffer to_device(const std::vector<char>& host) {
  DeviceBuffer device(host.size());
  check_cuda(cudaMemcpy(device.data(), host.data(), host.size(), cudaMemcpyHostToDevice), "cudaMemcpy to device");
  // From pageable memory the copy may still be landing when cudaMemcpy
  // returns, and the kernels run on non-blocking streams.
  check_cuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize after an upload");
  return device;
}
std::vector<char> to_host(const DeviceBuffer& device) {
  std::vector<char> host(device.size());
  check_cuda(cudaMemcpy(host.data(), device.data(), host.size(), cudaMemcpyDeviceToHost), "cudaMemcpy to host");
  return host;
}

// Elements as raw bits (integers in two's complement: wrapping is truncating
// to the low bytes) or as double (every floating test value is exact).
uint64_t load_bits(matex_dtype_t dtype, const char* base, size_t i) {
  uint64_t bits = 0;
  std::memcpy(&bits, base + i * dtype_size(dtype), dtype_size(dtype));
  return bits;
}
void store_bits(matex_dtype_t dtype, char* base, size_t i, uint64_t bits) {
  std::memcpy(base + i * dtype_size(dtype), &bits, dtype_size(dtype));  // little-endian: the low bytes
}
double load_float(matex_dtype_t dtype, const char* base, size_t i) {
  const uint64_t bits = load_bits(dtype, base, i);
  double value = 0;
  std::memcpy(&value, &bits, sizeof value);
  if (dtype == MATEX_FLOAT16) return half_to_float(static_cast<uint16_t>(bits));
  if (dtype == MATEX_BFLOAT16) return bf16_to_float(static_cast<uint16_t>(bits));
  return dtype == MATEX_FLOAT32 ? bits_float(static_cast<uint32_t>(bits)) : value;
}
void store_float(matex_dtype_t dtype, char* base, size_t i, double value) {
  uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof bits);
  if (dtype == MATEX_FLOAT16) bits = float_to_half(static_cast<float>(value));
  if (dtype == MATEX_BFLOAT16) bits = float_to_bf16(static_cast<float>(value));
  if (dtype == MATEX_FLOAT32) bits = float_bits(static_cast<float>(value));
  store_bits(dtype, base, i, bits);
}

// Any integer (sums and products wrap). Floating values exact in bfloat16
// whose sums, products and quarters are exact too; MIN/MAX also get NaNs.
std::vector<char> random_elements(matex_dtype_t dtype, matex_op_t op, size_t elements, uint64_t seed) {
  std::vector<char> data(elements * dtype_size(dtype));
  std::mt19937_64 random(seed);
  for (size_t i = 0; i < elements; ++i) {
    const uint64_t r = random();
    if (dtype == MATEX_BOOL) {
      store_bits(dtype, data.data(), i, r & 1);
    } else if (!dtype_is_floating(dtype)) {
      store_bits(dtype, data.data(), i, r);
    } else if (op == MATEX_PROD) {
      store_float(dtype, data.data(), i, static_cast<double>(static_cast<int>(r % 13) - 6) / 2);
    } else if ((op == MATEX_MIN || op == MATEX_MAX) && r % 7 == 0) {
      store_float(dtype, data.data(), i, r % 2 ? NAN : -NAN);
    } else {
      store_float(dtype, data.data(), i, static_cast<double>(static_cast<int>(r % 201) - 100) / 4);
    }
  }
  return data;
}

// Bit for bit; with any_nan, an expected NaN only needs some NaN.
void expect_same_elements(matex_dtype_t dtype, const std::vector<char>& expected, const std::vector<char>& actual,
                          bool any_nan = false) {
  ASSERT_EQ(expected.size(), actual.size());
  int reported = 0;
  for (size_t i = 0; i < expected.size() / dtype_size(dtype) && reported < 5; ++i) {
    const uint64_t want = load_bits(dtype, expected.data(), i);
    const uint64_t got = load_bits(dtype, actual.data(), i);
    if (want == got) continue;
    if (any_nan && std::isnan(load_float(dtype, expected.data(), i)) &&
        std::isnan(load_float(dtype, actual.data(), i))) {
      continue;
    }
    ++reported;
    ADD_FAILURE() << "element " << i << ": 0x" << std::hex << got << " != 0x" << want;
  }
}

// The bits of a op b; MIN/MAX keep a when a comparison involves a NaN, as
// the CPU kernels do.
uint64_t reference(matex_dtype_t dtype, matex_op_t op, const char* a_base, const char* b_base, size_t i) {
  if (dtype == MATEX_BOOL) {  // 0/1: sum and max are an or, prod and min an and
    const bool a = load_bits(dtype, a_base, i) != 0, b = load_bits(dtype, b_base, i) != 0;
    if (op == MATEX_BXOR) return a != b;
    if (op == MATEX_PROD || op == MATEX_MIN || op == MATEX_BAND) return a && b;
    return a || b;
  }
  if (!dtype_is_floating(dtype)) {
    const uint64_t ua = load_bits(dtype, a_base, i), ub = load_bits(dtype, b_base, i);
    const int shift = 64 - 8 * static_cast<int>(dtype_size(dtype));  // sign-extends the signed types
    const int64_t a = static_cast<int64_t>(ua << shift) >> shift;
    const int64_t b = static_cast<int64_t>(ub << shift) >> shift;
    const bool b_less = is_signed_integer(dtype) ? b < a : ub < ua;
    if (op == MATEX_PROD) return ua * ub;
    if (op == MATEX_MIN) return b_less ? ub : ua;
    if (op == MATEX_MAX) return b_less ? ua : ub;
    if (op == MATEX_BAND) return ua & ub;
    if (op == MATEX_BOR) return ua | ub;
    if (op == MATEX_BXOR) return ua ^ ub;
    return ua + ub;
  }
  const double a = load_float(dtype, a_base, i);
  const double b = load_float(dtype, b_base, i);
  double result = a + b;
  if (op == MATEX_PROD) result = a * b;
  if (op == MATEX_MIN) result = b < a ? b : a;
  if (op == MATEX_MAX) result = a < b ? b : a;
  char encoded[8] = {};
  store_float(dtype, encoded, 0, result);
  return load_bits(dtype, encoded, 0);
}

class ReduceTest : public ::testing::TestWithParam<std::tuple<matex_dtype_t, matex_op_t>> {};

TEST_P(ReduceTest, MatchesHostReferenceForEdgeCountsAndOffsets) {
  const auto [dtype, op] = GetParam();
  const size_t size = dtype_size(dtype);
  CudaStream stream;
  struct Offsets { size_t dst, src; };  // elements; equal ones leave 16-byte vectors possible
  for (size_t count : kEdgeCounts) {
    for (Offsets at : {Offsets{0, 0}, Offsets{1, 1}, Offsets{1, 0}, Offsets{0, 3}}) {
      SCOPED_TRACE("count " + std::to_string(count) + " at " + std::to_string(at.dst) + "/" + std::to_string(at.src));
      const std::vector<char> dst = random_elements(dtype, op, count + 4, count * 2 + 1);  // + untouched ones
      const std::vector<char> src = random_elements(dtype, op, count + 4, count * 2 + 2);
      DeviceBuffer dst_device = to_device(dst);
      DeviceBuffer src_device = to_device(src);
      launch_reduce(dtype, op, dst_device.data() + at.dst * size, src_device.data() + at.src * size, count,
                    stream.get());
      stream.synchronize("reduce");
      std::vector<char> expected = dst;
      for (size_t j = 0; j < count; ++j) {
        store_bits(dtype, expected.data(), at.dst + j,
                   reference(dtype, op, dst.data() + at.dst * size, src.data() + at.src * size, j));
      }
      expect_same_elements(dtype, expected, to_host(dst_device));
      expect_same_elements(dtype, src, to_host(src_device));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllDtypesAndOps, ReduceTest, ::testing::ValuesIn(valid_pairs()),
                         [](const auto& info) {
                           const matex_dtype_t dtype = std::get<0>(info.param);
                           return std::string(dtype_name(dtype)) + "_" + op_name(std::get<1>(info.param));
                         });

// Every binary16/bfloat16 bit pattern against a permutation of them: results
// round exactly like float_to_half/float_to_bf16. (The reference's double is
// exact, or for bfloat16 sums of values far apart rounds to the same float.)
// A NaN only needs to be a NaN: payloads of NaNs made by arithmetic differ.
TEST(ReduceKernel, SixteenBitFormatsRoundLikeTheHostConversions) {
  CudaStream stream;
  constexpr size_t kPatterns = 65536;
  for (matex_dtype_t dtype : {MATEX_FLOAT16, MATEX_BFLOAT16}) {
    std::vector<char> dst(kPatterns * 2);
    std::vector<char> src(kPatterns * 2);
    for (size_t i = 0; i < kPatterns; ++i) {
      store_bits(dtype, dst.data(), i, i);
      store_bits(dtype, src.data(), i, i * 40503u + 12345u);  // odd multiplier: a permutation
    }
    for (matex_op_t op : {MATEX_SUM, MATEX_PROD, MATEX_MIN, MATEX_MAX}) {
      SCOPED_TRACE(std::string(dtype_name(dtype)) + " " + op_name(op));
      DeviceBuffer dst_device = to_device(dst);
      DeviceBuffer src_device = to_device(src);
      launch_reduce(dtype, op, dst_device.data(), src_device.data(), kPatterns, stream.get());
      stream.synchronize("reduce");
      std::vector<char> expected(dst.size());
      for (size_t i = 0; i < kPatterns; ++i) {
        store_bits(dtype, expected.data(), i, reference(dtype, op, dst.data(), src.data(), i));
      }
      expect_same_elements(dtype, expected, to_host(dst_device), /*any_nan=*/true);
    }
  }
}

void expect_invalid_argument(const std::function<void()>& call) {
  try {
    call();
    ADD_FAILURE() << "no error raised";
  } catch (const Error& error) {
    EXPECT_EQ(error.status(), MATEX_ERR_INVALID_ARG) << error.what();
  }
}

TEST(ReduceKernel, RejectsUnknownDtypeAndOp) {
  CudaStream stream;
  DeviceBuffer buffer(64);
  char* data = buffer.data();
  expect_invalid_argument([&] { launch_reduce(MATEX_DTYPE_COUNT, MATEX_SUM, data, data + 32, 2, stream.get()); });
  expect_invalid_argument([&] { launch_reduce(MATEX_FLOAT32, MATEX_OP_COUNT, data, data + 32, 2, stream.get()); });
  for (matex_dtype_t dtype : kFloatingDtypes) {  // bitwise ops: integers and bool only
    expect_invalid_argument([&] { launch_reduce(dtype, MATEX_BXOR, data, data + 32, 2, stream.get()); });
  }
}

std::vector<char> random_bytes(size_t bytes, uint32_t seed) {
  std::vector<char> data(bytes);
  std::mt19937 random(seed);
  for (char& byte : data) byte = static_cast<char>(random());
  return data;
}

// Tensors of the given counts and factors (data ignored) in one buffer, the
// first at element `first`, the others 0..3 elements apart, scaled by one
// launch_scale each or by one batch; checks every element of the buffer.
void check_scale(matex_dtype_t dtype, std::vector<ScaleItem> items, size_t first, bool batched) {
  SCOPED_TRACE(std::string(dtype_name(dtype)) + " from " + std::to_string(first) + (batched ? " batched" : ""));
  std::mt19937 random(11);
  std::vector<size_t> offsets;
  size_t end = first;
  for (const ScaleItem& item : items) {
    offsets.push_back(offsets.empty() ? first : end + random() % 4);
    end = offsets.back() + item.count;
  }
  const std::vector<char> data = random_elements(dtype, MATEX_SUM, end + 4, 13);
  DeviceBuffer device = to_device(data);
  std::vector<char> expected = data;
  for (size_t i = 0; i < items.size(); ++i) {
    items[i].data = device.data() + offsets[i] * dtype_size(dtype);
    for (size_t j = offsets[i]; j < offsets[i] + items[i].count; ++j) {
      store_float(dtype, expected.data(), j, load_float(dtype, data.data(), j) * items[i].factor);
    }
  }
  CudaStream stream;
  if (batched) launch_batched_scale(dtype, items.data(), items.size(), stream.get());
  for (size_t i = 0; i < items.size() && !batched; ++i) {
    launch_scale(dtype, items[i].data, items[i].count, items[i].factor, stream.get());
  }
  stream.synchronize("scale");
  expect_same_elements(dtype, expected, to_host(device));
}

TEST(ScaleKernel, ScalesEdgeCountsAtEveryOffset) {
  std::vector<ScaleItem> items;
  for (size_t count : kEdgeCounts) {
    for (double factor : {0.5, 0.25, 2.0, 1.0}) items.push_back({nullptr, count, factor});
  }
  for (matex_dtype_t dtype : kFloatingDtypes) {
    for (size_t first : {0, 1}) check_scale(dtype, items, first, /*batched=*/false);
  }
}

// 300 tensors (several launches) of varied counts, factor 1 included.
TEST(ScaleKernel, BatchedScalesEveryTensorByItsFactor) {
  const size_t kCounts[] = {0, 1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 100, 1000, 4099};
  std::mt19937 random(5);
  std::vector<ScaleItem> items;
  for (int i = 0; i < 300; ++i) {
    items.push_back({nullptr, i % 50 == 7 ? 100003 : kCounts[random() % std::size(kCounts)], 0.25 * (1 << (i % 4))});
  }
  for (matex_dtype_t dtype : kFloatingDtypes) check_scale(dtype, items, 1, /*batched=*/true);
}

TEST(ScaleKernel, FactorOneChangesNothingAndIntegersAreRejected) {
  CudaStream stream;
  const std::vector<char> data = random_bytes(4096, 3);  // NaNs included
  DeviceBuffer device = to_device(data);
  for (matex_dtype_t dtype : kAllDtypes) {
    launch_scale(dtype, device.data(), data.size() / 8, 1.0, stream.get());
    const ScaleItem items[] = {{device.data(), 100, 1.0}, {device.data() + 1024, 0, 0.5}};
    launch_batched_scale(dtype, items, 2, stream.get());
  }
  stream.synchronize("scale");
  EXPECT_EQ(to_host(device), data);
  for (matex_dtype_t dtype : {MATEX_INT8, MATEX_UINT8, MATEX_INT16, MATEX_UINT16, MATEX_INT32, MATEX_UINT32, MATEX_INT64,
                              MATEX_UINT64, MATEX_BOOL}) {
    expect_invalid_argument([&] { launch_scale(dtype, device.data(), 4, 0.5, stream.get()); });
    const ScaleItem item{device.data(), 4, 0.5};
    expect_invalid_argument([&] { launch_batched_scale(dtype, &item, 1, stream.get()); });
  }
}

struct CopyShape {
  size_t bytes, src_modulo, dst_modulo;  // offsets modulo 16 of source and destination
};

// Copies of the given shapes, with untouched bytes in between, as one batch;
// checks every byte of both buffers.
void check_batched_copy(const std::vector<CopyShape>& shapes) {
  std::vector<size_t> src_offsets{0}, dst_offsets{0};
  for (const CopyShape& shape : shapes) {  // the next offsets: 1..16 bytes after the end, at the modulo
    src_offsets.back() = (src_offsets.back() + 16) / 16 * 16 + shape.src_modulo;
    dst_offsets.back() = (dst_offsets.back() + 16) / 16 * 16 + shape.dst_modulo;
    src_offsets.push_back(src_offsets.back() + shape.bytes);
    dst_offsets.push_back(dst_offsets.back() + shape.bytes);
  }
  const std::vector<char> src = random_bytes(src_offsets.back() + 16, 17);
  const std::vector<char> dst = random_bytes(dst_offsets.back() + 16, 19);
  DeviceBuffer src_device = to_device(src);
  DeviceBuffer dst_device = to_device(dst);
  std::vector<CopyItem> items;
  std::vector<char> expected = dst;
  for (size_t i = 0; i < shapes.size(); ++i) {
    items.push_back({src_device.data() + src_offsets[i], dst_device.data() + dst_offsets[i], shapes[i].bytes});
    std::memcpy(expected.data() + dst_offsets[i], src.data() + src_offsets[i], shapes[i].bytes);
  }
  CudaStream stream;
  launch_batched_copy(items.data(), items.size(), stream.get());
  stream.synchronize("batched copy");
  expect_same_elements(MATEX_UINT8, expected, to_host(dst_device));
  expect_same_elements(MATEX_UINT8, src, to_host(src_device));
}

TEST(BatchedCopyKernel, NoItemsAndEmptyItemsLaunchNothing) {
  CudaStream stream;
  launch_batched_copy(nullptr, 0, stream.get());
  const CopyItem empty[] = {{nullptr, nullptr, 0}, {nullptr, nullptr, 0}};
  launch_batched_copy(empty, 2, stream.get());
  stream.synchronize("batched copy");
  check_batched_copy({});
}

TEST(BatchedCopyKernel, OneItem) {
  check_batched_copy({{(1u << 20) + 3, 5, 3}});
  check_batched_copy({{4u << 20, 0, 0}});
  check_batched_copy({{1, 7, 9}});
}

// Every pair of source and destination offsets modulo 16 (16-byte, 4-byte
// and funnel-shifted loads), each with a short copy and one of several chunks.
TEST(BatchedCopyKernel, EveryAlignmentPair) {
  std::vector<CopyShape> shapes;
  for (size_t pair = 0; pair < 2 * 256; ++pair) {
    shapes.push_back({pair % 2 ? size_t{2 * 16384 + 37} : size_t{45}, pair / 2 % 16, pair / 32});
  }
  check_batched_copy(shapes);
}

// 300 items (three launches): empty, odd, around 16 bytes and the 16 KiB
// chunks, and a few of 3 MiB.
TEST(BatchedCopyKernel, ManyItemsOfVariedSizes) {
  const size_t kSizes[] = {0, 1, 2, 3, 15, 16, 17, 31, 33, 255, 4096, 4097, 16383, 16384, 16385, 65537};
  std::mt19937 random(23);
  std::vector<CopyShape> shapes;
  for (int i = 0; i < 300; ++i) {
    const size_t bytes = i % 60 == 13 ? (3u << 20) + 7 : kSizes[random() % std::size(kSizes)];
    shapes.push_back(i % 3 == 0 ? CopyShape{bytes, 0, 0} : CopyShape{bytes, random() % 16, random() % 16});
  }
  check_batched_copy(shapes);
}

TEST(BatchedCopyKernel, LargeAlignedTensors) { check_batched_copy(std::vector<CopyShape>(16, {4u << 20, 0, 0})); }

}  // namespace
}  // namespace matexcomm::gpu
