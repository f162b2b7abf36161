// Unit tests of the POSIX shared-memory owner: naming, mode, visibility of
// writes between two mappings, unlinking, and clean-up by RAII.
#include <gtest/gtest.h>
#include <sys/stat.h>
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
