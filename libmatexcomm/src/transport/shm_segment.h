// shm_segment.h - RAII owner of one POSIX shared-memory mapping.
//
// Names are "/matex-<uid>-<pid>-<serial>-<random>", mode 0600, created with
// O_EXCL. The name is unlinked as soon as every user has mapped it (see
// ShmNodeChannel), so a crash can never leave a segment behind; the mapping
// lives until the last process unmaps it.
#pragma once

#include <cstddef>
#include <string>

namespace matexcomm {

// Prefix of every segment name (without the leading '/'): tests look for leaks with it.
constexpr const char* kShmNamePrefix = "matex-";

class ShmSegment {
 public:
  ShmSegment() = default;
  ~ShmSegment();
  ShmSegment(const ShmSegment&) = delete;
  ShmSegment& operator=(const ShmSegment&) = delete;
  ShmSegment(ShmSegment&& other) noexcept;
  ShmSegment& operator=(ShmSegment&& other) noexcept;

  // Creates and maps a new zero-filled segment of `bytes` and reserves its
  // first `reserved_bytes` (posix_fallocate, so a full /dev/shm fails here
  // rather than with SIGBUS later). Where the kernel cannot reserve later
  // (see reserve), all of it is reserved now.
  static ShmSegment create(size_t bytes, size_t reserved_bytes);
  // Maps an existing segment created by another process.
  static ShmSegment open(const std::string& name, size_t bytes);
  static std::string unique_name();
  // Unlinks segments of this user whose creating process is gone (left by a
  // job killed between creation and unlink). Called by create().
  static void remove_stale_segments() noexcept;

  // Makes sure [offset, offset + length) of this process's mapping is backed
  // by memory, so that touching it cannot raise SIGBUS: MADV_POPULATE_WRITE
  // (Linux 5.14), which reports a full /dev/shm as an error. A no-op where
  // create reserved everything. Raises MATEX_ERR_SYSTEM on failure.
  void reserve(size_t offset, size_t length) const;
  // Whether this kernel can reserve after mapping (tried once per process).
  static bool reserves_later();

  // Removes the name; the mapping stays valid. Safe to call twice.
  void unlink_name() noexcept;

  void* data() const noexcept { return data_; }
  size_t size() const noexcept { return size_; }
  const std::string& name() const noexcept { return name_; }

 private:
  void release() noexcept;
  std::string name_;
  void* data_ = nullptr;
  size_t size_ = 0;
  bool owns_name_ = false;
};

}  // namespace matexcomm
