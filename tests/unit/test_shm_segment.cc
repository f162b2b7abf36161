// Unit tests of the POSIX shared-memory owner: naming, mode, visibility of
// writes between two mappings, unlinking, clean-up by RAII, and reserving
// memory up front or on demand.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "core/error.h"
#include "transport/shm_segment.h"

namespace matexcomm {
namespace {

bool exists_in_dev_shm(const std::string& name) {
  struct stat info;
  return ::stat(("/dev/shm" + name).c_str(), &info) == 0;
}

TEST(ShmSegment, CreateMapUnlink) {
  ShmSegment created = ShmSegment::create(8192, 8192);
  ASSERT_NE(created.data(), nullptr);
  EXPECT_EQ(created.size(), 8192u);
  EXPECT_EQ(created.name().rfind(std::string("/") + kShmNamePrefix, 0), 0u) << created.name();
  ASSERT_TRUE(exists_in_dev_shm(created.name()));
  struct stat info;
  ASSERT_EQ(::stat(("/dev/shm" + created.name()).c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0600u);

  ShmSegment opened = ShmSegment::open(created.name(), 8192);
  std::memcpy(created.data(), "hello", 6);
  EXPECT_STREQ(static_cast<const char*>(opened.data()), "hello");
  // Zero-filled beyond what was written.
  EXPECT_EQ(static_cast<const char*>(opened.data())[4000], 0);

  created.unlink_name();
  EXPECT_FALSE(exists_in_dev_shm(created.name()));
  // Mappings survive the unlink.
  std::memcpy(opened.data(), "world", 6);
  EXPECT_STREQ(static_cast<const char*>(created.data()), "world");
}

// Bytes of memory behind the segment `name` (its blocks in /dev/shm).
long long backed_bytes(const std::string& name) {
  struct stat info;
  EXPECT_EQ(::stat(("/dev/shm" + name).c_str(), &info), 0) << name;
  return static_cast<long long>(info.st_blocks) * 512;
}

// A channel that only ever carries small calls must not pay for zeroing all
// of its buffers when it is created: only what create reserves is backed, and
// reserve backs more on demand (where the kernel can reserve after mapping).
TEST(ShmSegment, ReservesUpFrontOnlyWhatItIsAskedTo) {
  constexpr size_t kBytes = 1 << 20;
  const long long page = ::sysconf(_SC_PAGESIZE);
  ShmSegment created = ShmSegment::create(kBytes, page);
  ShmSegment opened = ShmSegment::open(created.name(), kBytes);
  if (!ShmSegment::reserves_later()) {
    EXPECT_EQ(backed_bytes(created.name()), static_cast<long long>(kBytes)) << "no MADV_POPULATE_WRITE: all reserved";
    GTEST_SKIP() << "this kernel cannot reserve after mapping (MADV_POPULATE_WRITE, Linux 5.14)";
  }
  if (backed_bytes(created.name()) != page) GTEST_SKIP() << "tmpfs backs more than a page at a time (huge pages)";
  // From the other mapping, at an offset that is not page-aligned: whole pages around it.
  opened.reserve(65536 + 100, 131072);
  const long long backed = backed_bytes(created.name());
  EXPECT_GE(backed, page + 131072);
  EXPECT_LE(backed, page + 131072 + 2 * page);
  // Reserving what is reserved, or past the end (clipped), is harmless.
  opened.reserve(65536, page);
  EXPECT_EQ(backed_bytes(created.name()), backed);
  created.reserve(kBytes - page, 1 << 20);
  EXPECT_EQ(backed_bytes(created.name()), backed + page);
  // Reserved memory is zero and shared between the mappings.
  char* mine = static_cast<char*>(created.data());
  const char* theirs = static_cast<const char*>(opened.data());
  EXPECT_EQ(theirs[65536 + 100], 0);
  EXPECT_EQ(theirs[kBytes - 1], 0);
  mine[65536 + 100] = 7;
  mine[kBytes - 1] = 9;
  EXPECT_EQ(theirs[65536 + 100], 7);
  EXPECT_EQ(theirs[kBytes - 1], 9);
}

// Run by the ctest shm_segment.full_dev_shm only, in its own mount namespace
// with a 1 MiB tmpfs on /dev/shm (MATEX_TEST_SMALL_DEV_SHM=1): what does not
// fit is a clear error, at creation or when reserving, never a SIGBUS.
TEST(ShmSegmentOnASmallDevShm, WhatDoesNotFitIsAClearError) {
  const char* small = std::getenv("MATEX_TEST_SMALL_DEV_SHM");
  if (small == nullptr || std::string(small) != "1") {
    GTEST_SKIP() << "needs a 1 MiB /dev/shm (ctest shm_segment.full_dev_shm)";
  }
  if (!ShmSegment::reserves_later()) GTEST_SKIP() << "this kernel reserves everything at creation";
  // Creation checks that what is reserved later fits now.
  try {
    ShmSegment::create(2 << 20, 4096);
    FAIL() << "a 2 MiB segment was created on a 1 MiB /dev/shm";
  } catch (const Error& error) {
    EXPECT_EQ(error.status(), MATEX_ERR_SYSTEM);
    EXPECT_NE(error.message().find("/dev/shm has"), std::string::npos) << error.message();
    EXPECT_NE(error.message().find("MATEX_SHM_CHUNK_BYTES"), std::string::npos) << error.message();
  }
  // It fits at creation, then something else takes the space: reserving fails cleanly.
  ShmSegment segment = ShmSegment::create(512 << 10, 4096);
  ShmSegment hog = ShmSegment::create(900 << 10, 900 << 10);
  try {
    segment.reserve(0, 512 << 10);
    FAIL() << "reserving 512 KiB succeeded with about 100 KiB free";
  } catch (const Error& error) {
    EXPECT_EQ(error.status(), MATEX_ERR_SYSTEM);
    EXPECT_NE(error.message().find("/dev/shm is full"), std::string::npos) << error.message();
  }
  // What was reserved stays usable.
  static_cast<char*>(segment.data())[100] = 1;
  EXPECT_EQ(static_cast<char*>(segment.data())[100], 1);
}

TEST(ShmSegment, DestructorRemovesName) {
  std::string name;
  {
    ShmSegment segment = ShmSegment::create(4096, 4096);
    name = segment.name();
    ShmSegment moved = std::move(segment);
    EXPECT_EQ(segment.data(), nullptr);
    EXPECT_TRUE(exists_in_dev_shm(name));
  }
  EXPECT_FALSE(exists_in_dev_shm(name));
}

// A name as a killed job would leave it: creator pid `pid`.
std::string leave_segment_of(long pid) {
  std::string name = "/" + std::string(kShmNamePrefix) + std::to_string(::getuid()) + "-" + std::to_string(pid) +
                     "-0-test";
  int fd = ::shm_open(name.c_str(), O_RDWR | O_CREAT, 0600);
  EXPECT_GE(fd, 0);
  if (fd >= 0) ::close(fd);
  return name;
}

TEST(ShmSegment, StaleSegmentsOfDeadCreatorsAreRemoved) {
  pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  ASSERT_GT(child, 0);
  ::waitpid(child, nullptr, 0);  // `child` is now a pid with no process
  std::string stale = leave_segment_of(child);
  std::string live = leave_segment_of(::getpid());
  ASSERT_TRUE(exists_in_dev_shm(stale));
  ShmSegment::remove_stale_segments();
  EXPECT_FALSE(exists_in_dev_shm(stale)) << stale;
  EXPECT_TRUE(exists_in_dev_shm(live)) << "a live creator's segment must stay: " << live;
  ::shm_unlink(live.c_str());
  ::shm_unlink(stale.c_str());
}

TEST(ShmSegment, NamesAreUnique) {
  EXPECT_NE(ShmSegment::unique_name(), ShmSegment::unique_name());
}

TEST(ShmSegment, OpeningAMissingSegmentFailsClearly) {
  try {
    ShmSegment::open("/matex-does-not-exist-" + std::to_string(::getpid()), 4096);
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_EQ(error.status(), MATEX_ERR_SYSTEM);
    EXPECT_NE(error.message().find("matex-does-not-exist"), std::string::npos) << error.message();
  }
}

}  // namespace
}  // namespace matexcomm
