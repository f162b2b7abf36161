#include "transport/shm_segment.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <random>
#include <utility>

#include "core/error.h"

namespace matexcomm {

namespace {

// Closes a file descriptor on scope exit.
struct FdCloser {
  int fd;
  ~FdCloser() {
    if (fd >= 0) ::close(fd);
  }
};

std::string errno_text(int error) { return std::string(std::strerror(error)); }

void* map_fd(int fd, size_t bytes, const std::string& name) {
  void* data = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (data == MAP_FAILED) {
    MATEX_RAISE(MATEX_ERR_SYSTEM, "mmap of shared-memory segment " + name + " (" + std::to_string(bytes) +
                                      " bytes) failed: " + errno_text(errno));
  }
  return data;
}

}  // namespace

ShmSegment::~ShmSegment() { release(); }

ShmSegment::ShmSegment(ShmSegment&& other) noexcept
    : name_(std::move(other.name_)),
      data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      owns_name_(std::exchange(other.owns_name_, false)) {}

ShmSegment& ShmSegment::operator=(ShmSegment&& other) noexcept {
  if (this != &other) {
    release();
    name_ = std::move(other.name_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    owns_name_ = std::exchange(other.owns_name_, false);
  }
  return *this;
}

std::string ShmSegment::unique_name() {
  static std::atomic<unsigned> serial{0};
  std::random_device device;
  char buffer[96];
  std::snprintf(buffer, sizeof buffer, "/%s%u-%ld-%u-%08x", kShmNamePrefix, static_cast<unsigned>(::getuid()),
                static_cast<long>(::getpid()), serial.fetch_add(1), static_cast<unsigned>(device()));
  return buffer;
}

void ShmSegment::remove_stale_segments() noexcept {
  // Names are matex-<uid>-<pid>-...: a segment of ours whose creator no longer
  // exists was left by a job killed during set-up (the only window in which a
  // name exists). A live or unknown pid is left alone.
  const std::string mine = std::string(kShmNamePrefix) + std::to_string(::getuid()) + "-";
  DIR* dir = ::opendir("/dev/shm");
  if (dir == nullptr) return;
  while (const struct dirent* entry = ::readdir(dir)) {
    std::string name = entry->d_name;
    if (name.compare(0, mine.size(), mine) != 0) continue;
    long pid = std::strtol(name.c_str() + mine.size(), nullptr, 10);
    if (pid > 0 && ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) ::shm_unlink(("/" + name).c_str());
  }
  ::closedir(dir);
}

ShmSegment ShmSegment::create(size_t bytes) {
  remove_stale_segments();
  ShmSegment segment;
  segment.name_ = unique_name();
  int fd = ::shm_open(segment.name_.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
  if (fd < 0) {
    MATEX_RAISE(MATEX_ERR_SYSTEM, "shm_open(" + segment.name_ + ", O_CREAT) failed: " + errno_text(errno));
  }
  FdCloser closer{fd};
  segment.owns_name_ = true;  // from here on the destructor unlinks the name
  int rc = ::posix_fallocate(fd, 0, static_cast<off_t>(bytes));
  if (rc != 0) {
    MATEX_RAISE(MATEX_ERR_SYSTEM, "reserving " + std::to_string(bytes) + " bytes of shared memory for " +
                                      segment.name_ + " failed: " + errno_text(rc) +
                                      " (is /dev/shm large enough? lower MATEX_SHM_CHUNK_BYTES)");
  }
  segment.data_ = map_fd(fd, bytes, segment.name_);
  segment.size_ = bytes;
  return segment;
}

ShmSegment ShmSegment::open(const std::string& name, size_t bytes) {
  int fd = ::shm_open(name.c_str(), O_RDWR, 0600);
  if (fd < 0) MATEX_RAISE(MATEX_ERR_SYSTEM, "shm_open(" + name + ") failed: " + errno_text(errno));
  FdCloser closer{fd};
  struct stat info;
  if (::fstat(fd, &info) != 0 || static_cast<size_t>(info.st_size) < bytes) {
    // Mapping past the end would turn the first access into SIGBUS.
    MATEX_RAISE(MATEX_ERR_SYSTEM, "shared-memory segment " + name + " holds " + std::to_string(info.st_size) +
                                      " bytes but " + std::to_string(bytes) +
                                      " are needed: do the ranks of this node agree on MATEX_SHM_CHUNK_BYTES?");
  }
  ShmSegment segment;
  segment.name_ = name;
  segment.data_ = map_fd(fd, bytes, name);
  segment.size_ = bytes;
  return segment;
}

void ShmSegment::unlink_name() noexcept {
  if (owns_name_) ::shm_unlink(name_.c_str());
  owns_name_ = false;
}

void ShmSegment::release() noexcept {
  unlink_name();
  if (data_ != nullptr) ::munmap(data_, size_);
  data_ = nullptr;
  size_ = 0;
}

}  // namespace matexcomm
