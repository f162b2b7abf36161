// aligned_buffer.h - RAII owner of a page-aligned heap buffer, pre-touched
// (zero-filled) so that page faults never land inside a timed call.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>

namespace matexbench {

class AlignedBuffer {
 public:
  explicit AlignedBuffer(size_t bytes) : size_(bytes) {
    constexpr size_t kAlign = 4096;
    const size_t rounded = (bytes + kAlign - 1) / kAlign * kAlign;
    data_.reset(std::aligned_alloc(kAlign, rounded == 0 ? kAlign : rounded));
    if (!data_) throw std::bad_alloc();
    std::memset(data_.get(), 0, rounded);
  }

  void* data() const noexcept { return data_.get(); }
  unsigned char* bytes() const noexcept { return static_cast<unsigned char*>(data_.get()); }
  size_t size() const noexcept { return size_; }

 private:
  struct Free {
    void operator()(void* p) const noexcept { std::free(p); }
  };
  std::unique_ptr<void, Free> data_;
  size_t size_;
};

}  // namespace matexbench
