// micro_reduce_kernels.cc - Google Benchmark of the element-wise reduction
// kernel reduce_sources (core/reduce_kernels.h): 2 and 4 sources, every
// dtype, sum and max (and bxor for the integer and bool dtypes), 4 KiB ..
// 64 MiB per source buffer.
//
// Bytes processed = (sources + 1) x buffer bytes: every source read once and
// the output written once, so GB/s compares directly with memcpy bandwidth.
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "aligned_buffer.h"
#include "core/reduce_kernels.h"
#include "element_codec.h"

namespace matexbench {
namespace {

void reduce_sources_benchmark(benchmark::State& state, matex_dtype_t dtype, matex_op_t op, int nsrc) {
  const size_t bytes = static_cast<size_t>(state.range(0));
  const size_t count = bytes / matex_dtype_size(dtype);
  std::vector<AlignedBuffer> sources;
  std::vector<const void*> pointers;
  for (int s = 0; s < nsrc; ++s) {
    sources.emplace_back(bytes);
    // Small normal values: zeros or the bytes of a pattern could be denormal floats.
    for (size_t i = 0; i < count; ++i) store_element(dtype, sources.back().data(), i, static_cast<double>(1 + (i + s) % 3));
    pointers.push_back(sources.back().data());
  }
  AlignedBuffer out(bytes);
  for (auto _ : state) {
    matexcomm::reduce_sources(dtype, op, out.data(), pointers.data(), nsrc, count);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(bytes) * (nsrc + 1));
}

const bool registered = [] {
  for (int nsrc : {2, 4}) {
    for (int d = 0; d < MATEX_DTYPE_COUNT; ++d) {
      for (matex_op_t op : {MATEX_SUM, MATEX_MAX, MATEX_BXOR}) {
        const auto dtype = static_cast<matex_dtype_t>(d);
        if (op == MATEX_BXOR && dtype_is_float(dtype)) continue;  // bitwise: integers and bool only
        const std::string name = std::string("reduce_sources/") + std::to_string(nsrc) + "src/" + matex_dtype_name(dtype) +
                                 "/" + matex_op_name(op);
        benchmark::RegisterBenchmark(name.c_str(), reduce_sources_benchmark, dtype, op, nsrc)
            ->RangeMultiplier(4)
            ->Range(4 << 10, 64 << 20);
      }
    }
  }
  return true;
}();

}  // namespace
}  // namespace matexbench
