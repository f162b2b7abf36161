// host_scratch.h - reusable host memory that grows on demand and is never
// filled: every user overwrites what it reads back.
//
// std::vector<char>::resize writes every new byte. For the scratch of
// rs_ar_ag_cma (two pipeline steps of 1-2 MiB per neighbour) that faulted in
// and zeroed 4 MiB on the first large call, 3-4 ms of its first call at np 4
// here, most of it memory that call never touches. Fresh pages from the kernel
// are faulted in only where they are written.
// Cost: reserve() is free while the memory suffices; growing frees the old
//   block (its contents are not kept) and takes a new one.
// Preconditions: callers write every byte they read.
#pragma once

#include <cstddef>
#include <memory>

namespace matexcomm {

class HostScratch {
 public:
  // At least `bytes` of memory, valid until the next reserve() that grows it.
  char* reserve(size_t bytes) {
    if (data_ == nullptr || bytes > size_) {
      data_.reset();  // the old block goes first, so the two never coexist
      data_.reset(new char[bytes == 0 ? 1 : bytes]);
      size_ = bytes;
    }
    return data_.get();
  }
  size_t size() const noexcept { return size_; }

 private:
  std::unique_ptr<char[]> data_;
  size_t size_ = 0;
};

}  // namespace matexcomm
