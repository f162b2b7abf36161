// Unit tests of the MATEX_* table: parsing, validation, and that
// docs/configuration.md carries exactly the table the code generates.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <fstream>
#include <sstream>

#include "core/config.h"
#include "core/error.h"

namespace matexcomm {
namespace {

struct ScopedEnv {
  ScopedEnv(const char* name, const char* value) : name_(name) {
    const char* old = getenv(name);
    had_ = old != nullptr;
    if (had_) old_ = old;
    setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (had_) setenv(name_, old_.c_str(), 1);
    else unsetenv(name_);
  }
  const char* name_;
  bool had_ = false;
  std::string old_;
};

TEST(ConfigParse, Bytes) {
  size_t value = 0;
  ASSERT_TRUE(parse_bytes("4096", &value));
  EXPECT_EQ(value, 4096u);
  ASSERT_TRUE(parse_bytes("64K", &value));
  EXPECT_EQ(value, 65536u);
  ASSERT_TRUE(parse_bytes(" 2M ", &value));
  EXPECT_EQ(value, 2u << 20);
  ASSERT_TRUE(parse_bytes("1G", &value));
  EXPECT_EQ(value, 1u << 30);
  EXPECT_FALSE(parse_bytes("", &value));
  EXPECT_FALSE(parse_bytes("-5", &value));
  EXPECT_FALSE(parse_bytes("12Q", &value));
  EXPECT_FALSE(parse_bytes("K", &value));
  EXPECT_FALSE(parse_bytes("99999999999999999999G", &value));
}

TEST(ConfigParse, BoolIntSeconds) {
  bool flag = false;
  EXPECT_TRUE(parse_bool("yes", &flag) && flag);
  EXPECT_TRUE(parse_bool("OFF", &flag) && !flag);
  EXPECT_FALSE(parse_bool("maybe", &flag));
  int64_t integer = 0;
  EXPECT_TRUE(parse_int("-12", &integer) && integer == -12);
  EXPECT_FALSE(parse_int("12x", &integer));
  double seconds = 0;
  EXPECT_TRUE(parse_seconds("2.5", &seconds) && seconds == 2.5);
  EXPECT_FALSE(parse_seconds("inf", &seconds));
}

TEST(Config, DefaultsComeFromTheTable) {
  Config config = Config::from_environment();
  for (const ConfigEntry& entry : config_table()) {
    if (getenv(entry.name) == nullptr) {
      EXPECT_EQ(config.raw(entry.name), entry.default_value) << entry.name;
    }
  }
  EXPECT_GT(config.get_seconds("MATEX_TIMEOUT_SECONDS"), 0.0);
}

TEST(Config, EnvironmentOverrides) {
  ScopedEnv env("MATEX_SHM_CHUNK_BYTES", "1M");
  Config config = Config::from_environment();
  EXPECT_EQ(config.get_bytes("MATEX_SHM_CHUNK_BYTES"), 1u << 20);
  EXPECT_TRUE(config.is_set("MATEX_SHM_CHUNK_BYTES"));
}

TEST(Config, BadValueNamesTheVariable) {
  ScopedEnv env("MATEX_ALLREDUCE_ALGO", "fastest");
  try {
    Config::from_environment();
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_EQ(error.status(), MATEX_ERR_CONFIG);
    EXPECT_NE(error.message().find("MATEX_ALLREDUCE_ALGO"), std::string::npos) << error.message();
    EXPECT_NE(error.message().find("fastest"), std::string::npos) << error.message();
  }
}

TEST(Config, NegativeTimeoutRejected) {
  ScopedEnv env("MATEX_TIMEOUT_SECONDS", "-1");
  EXPECT_THROW(Config::from_environment(), Error);
}

TEST(Config, EveryRowIsComplete) {
  for (const ConfigEntry& entry : config_table()) {
    EXPECT_EQ(std::string(entry.name).rfind("MATEX_", 0), 0u) << entry.name;
    EXPECT_GT(std::string(entry.doc).size(), 10u) << entry.name;
    if (entry.type == ConfigType::kChoice) {
      EXPECT_NE(std::string(entry.choices), "") << entry.name;
    }
  }
}

TEST(Config, DocsTableMatchesCode) {
  std::ifstream file(std::string(MATEX_DOCS_DIR) + "/configuration.md");
  ASSERT_TRUE(file.good()) << "docs/configuration.md is missing";
  std::stringstream text;
  text << file.rdbuf();
  EXPECT_NE(text.str().find(config_table_markdown()), std::string::npos)
      << "docs/configuration.md is out of date; regenerate the table with "
         "`build/bin/matex-topo --print-config-markdown`. Expected table:\n"
      << config_table_markdown();
}

}  // namespace
}  // namespace matexcomm
