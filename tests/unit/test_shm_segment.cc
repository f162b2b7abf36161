// Unit tests of the POSIX shared-memory owner: naming, mode, visibility of
// writes between two mappings, unlinking, and clean-up by RAII.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

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
  ShmSegment created = ShmSegment::create(8192);
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

TEST(ShmSegment, DestructorRemovesName) {
  std::string name;
  {
    ShmSegment segment = ShmSegment::create(4096);
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
