#include "transport/shm_segment.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
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

// What every "does not fit" error ends with.
constexpr const char* kSpaceHint = "; make /dev/shm larger or lower MATEX_SHM_CHUNK_BYTES";

// madvise(MADV_POPULATE_WRITE): Linux 5.14's value, for C libraries that predate it.
#ifdef MADV_POPULATE_WRITE
constexpr int kPopulateWrite = MADV_POPULATE_WRITE;
#else
constexpr int kPopulateWrite = 23;
#endif

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

bool ShmSegment::reserves_later() {
  static const bool supported = [] {
    void* page = ::mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (page == MAP_FAILED) return false;
    const bool ok = ::madvise(page, 4096, kPopulateWrite) == 0;
    ::munmap(page, 4096);
    return ok;
  }();
  return supported;
}

void ShmSegment::reserve(size_t offset, size_t length) const {
  if (length == 0 || !reserves_later()) return;
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  const size_t first = offset / page * page;
  const size_t end = std::min(size_, (offset + length + page - 1) / page * page);
  if (end <= first) return;
  int rc = 0;
  for (int attempt = 0; attempt < 100; ++attempt) {  // EAGAIN/EINTR: transient, try again
    rc = ::madvise(static_cast<char*>(data_) + first, end - first, kPopulateWrite);
    if (rc == 0 || (errno != EAGAIN && errno != EINTR)) break;
  }
  if (rc != 0) {
    const int error = errno;
    // EFAULT: the fault that touching would have turned into SIGBUS, i.e. /dev/shm is full.
    MATEX_RAISE(MATEX_ERR_SYSTEM, "reserving " + std::to_string(end - first) + " bytes of shared memory in " + name_ +
                                      " failed: " +
                                      (error == EFAULT || error == ENOMEM
                                           ? "/dev/shm is full (" + errno_text(error) + ")"
                                           : errno_text(error)) +
                                      kSpaceHint);
  }
}

ShmSegment ShmSegment::create(size_t bytes, size_t reserved_bytes) {
  remove_stale_segments();
  ShmSegment segment;
  segment.name_ = unique_name();
  int fd = ::shm_open(segment.name_.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
  if (fd < 0) {
    MATEX_RAISE(MATEX_ERR_SYSTEM, "shm_open(" + segment.name_ + ", O_CREAT) failed: " + errno_text(errno));
  }
  FdCloser closer{fd};
  segment.owns_name_ = true;  // from here on the destructor unlinks the name
  if (::ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    MATEX_RAISE(MATEX_ERR_SYSTEM, "sizing shared-memory segment " + segment.name_ + " to " + std::to_string(bytes) +
                                      " bytes failed: " + errno_text(errno));
  }
  const size_t reserved = reserves_later() ? std::min(reserved_bytes, bytes) : bytes;
  if (reserved < bytes) {
    // What is reserved later must fit now, or the channel fails at set-up (and
    // the communicator falls back to MPI) rather than at a large call. A tmpfs
    // without a size limit reports no blocks at all.
    struct statvfs space;
    if (::fstatvfs(fd, &space) == 0 && space.f_blocks > 0 &&
        static_cast<unsigned long long>(space.f_bavail) * space.f_frsize < bytes) {
      MATEX_RAISE(MATEX_ERR_SYSTEM, "shared memory for " + segment.name_ + " needs " + std::to_string(bytes) +
                                        " bytes but /dev/shm has " +
                                        std::to_string(static_cast<unsigned long long>(space.f_bavail) *
                                                       space.f_frsize) +
                                        " free" + kSpaceHint);
    }
  }
  int rc = reserved > 0 ? ::posix_fallocate(fd, 0, static_cast<off_t>(reserved)) : 0;
  if (rc != 0) {
    MATEX_RAISE(MATEX_ERR_SYSTEM, "reserving " + std::to_string(reserved) + " bytes of shared memory for " +
                                      segment.name_ + " failed: " + errno_text(rc) + kSpaceHint);
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
