// response_cache.h - the tensors every rank has run before, each with a bit.
//
// All ranks add and drop entries while executing the same response lists in
// the same order, so the caches, and so the bit numbers, are identical
// everywhere. A tensor submitted again with its cached spec is then announced
// by setting its bit: one MPI_Allreduce (bitwise and) per cycle tells every
// rank which cached tensors all ranks have submitted, without the gather and
// broadcast of a full negotiation. A dropped entry keeps its bit, unused, so
// later bits do not move.
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "engine/negotiation.h"

namespace matexcomm {

class ResponseCache {
 public:
  static constexpr int kNone = -1;
  explicit ResponseCache(size_t capacity) : capacity_(capacity) {}

  // The bit of `name` if it is cached with this very spec, else kNone.
  int bit_of(const std::string& name, const TensorSpec& spec) const {
    auto it = bits_.find(name);
    if (it == bits_.end() || !entries_[it->second].spec.agrees_exactly(spec)) return kNone;
    return it->second;
  }
  // Caches `name` with `spec` (an agreed one); a known name keeps its bit and takes the new spec.
  void add(const std::string& name, const TensorSpec& spec) {
    auto it = bits_.find(name);
    if (it != bits_.end()) {
      entries_[it->second].spec = spec;
      return;
    }
    if (entries_.size() >= capacity_) return;
    bits_.emplace(name, static_cast<int>(entries_.size()));
    entries_.push_back({name, spec});
  }
  void drop(const std::string& name) {
    auto it = bits_.find(name);
    if (it == bits_.end()) return;
    entries_[it->second].name.clear();  // the bit stays taken
    bits_.erase(it);
  }
  size_t bit_count() const { return entries_.size(); }
  const std::string& name(int bit) const { return entries_[bit].name; }
  const TensorSpec& spec(int bit) const { return entries_[bit].spec; }

 private:
  struct Entry {
    std::string name;
    TensorSpec spec;
  };
  size_t capacity_;
  std::unordered_map<std::string, int> bits_;
  std::vector<Entry> entries_;
};

}  // namespace matexcomm
