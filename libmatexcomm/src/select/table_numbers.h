// table_numbers.h - reading a selection table back from the doubles that one
// MPI_Bcast carried (allreduce_table.cc, broadcast_table.cc). Every number is
// checked before it becomes a count, a size or an enum value, so that a
// corrupt message is an error that names the field, never undefined
// behaviour.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/error.h"

namespace matexcomm {

// data[at] as a whole number in [0, limit], or MATEX_ERR_INTERNAL ("a corrupt
// <table> arrived: <field>"). limit must not exceed 2^53.
inline uint64_t whole_number(const std::vector<double>& data, size_t at, double limit, const char* table,
                             const char* field) {
  const double value = at < data.size() ? data[at] : -1;
  MATEX_REQUIRE(std::isfinite(value) && value >= 0 && value <= limit && value == std::floor(value),
                MATEX_ERR_INTERNAL, std::string("a corrupt ") + table + " arrived: " + field);
  return static_cast<uint64_t>(value);
}

// data[at] as a finite number, or the same error.
inline double finite_number(const std::vector<double>& data, size_t at, const char* table, const char* field) {
  const double value = at < data.size() ? data[at] : NAN;
  MATEX_REQUIRE(std::isfinite(value), MATEX_ERR_INTERNAL, std::string("a corrupt ") + table + " arrived: " + field);
  return value;
}

}  // namespace matexcomm
