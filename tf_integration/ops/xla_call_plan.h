// xla_call_plan.h - what one of matex's collectives does inside an
// XLA-compiled function, fixed when XLA compiles it and carried to the
// custom call as its opaque string (xla_lowerings.cc writes it,
// xla_host_call.cc reads it at every execution).
//
// Text form: a header line "coll op dtype root prescale postscale tensors",
// then one line per tensor, "count row_elements name" (the name is the rest
// of the line). Names may hold anything but a newline (the lowering refuses
// one), and decoding checks the number of tensors against the header's.
#pragma once

#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "matexcomm/matexcomm.h"

namespace matex_tf {

struct XlaCallPlan {
  struct Tensor {
    size_t count = 0;         // elements (allgather: this rank's rows)
    size_t row_elements = 1;  // allgather: elements per row
    std::string name;
  };
  matex_collective_t coll = MATEX_COLL_ALLREDUCE;
  matex_op_t op = MATEX_SUM;
  matex_dtype_t dtype = MATEX_FLOAT32;
  int root = 0;
  double prescale = 1.0;
  double postscale = 1.0;
  std::vector<Tensor> tensors;

  std::string encode() const {
    char header[160];
    std::snprintf(header, sizeof header, "%d %d %d %d %.17g %.17g %zu\n", static_cast<int>(coll),
                  static_cast<int>(op), static_cast<int>(dtype), root, prescale, postscale, tensors.size());
    std::string text = header;
    for (const Tensor& t : tensors) text += std::to_string(t.count) + " " + std::to_string(t.row_elements) + " " +
                                           t.name + "\n";
    return text;
  }

  // False when the text is not a plan (a custom call of another origin).
  bool decode(const std::string& text) {
    std::istringstream in(text);
    int c = 0, o = 0, d = 0;
    size_t expected = 0;
    if (!(in >> c >> o >> d >> root >> prescale >> postscale >> expected)) return false;
    coll = static_cast<matex_collective_t>(c);
    op = static_cast<matex_op_t>(o);
    dtype = static_cast<matex_dtype_t>(d);
    in.ignore(1);
    tensors.clear();
    std::string line;
    while (std::getline(in, line)) {
      Tensor t;
      std::istringstream fields(line);
      if (!(fields >> t.count >> t.row_elements)) return false;
      fields.ignore(1);
      std::getline(fields, t.name);
      tensors.push_back(std::move(t));
    }
    return !tensors.empty() && tensors.size() == expected;
  }
};

// The custom-call target every lowering calls (registered for the host platform).
inline constexpr const char* kXlaHostCallTarget = "matex_xla_host_collective";

}  // namespace matex_tf
