// The tuning file's JSON reader, its round trip, why unfit files are refused,
// and matex-tune's alpha-beta fit against closed-form times.
#include <gtest/gtest.h>

#include <string>

#include "../../tools/matex-tune/cost_fit.h"
#include "../mpi/mpi_test_util.h"  // ScopedEnv
#include "core/error.h"
#include "core/json_value.h"
#include "core/tuning_file.h"

namespace matexcomm {
namespace {

std::string error_of(const std::string& text) {
  try {
    JsonValue::parse(text);
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), MATEX_ERR_INVALID_ARG);
    return e.message();
  }
  return "";
}

TEST(JsonValue, ReadsEveryKind) {
  const JsonValue v = JsonValue::parse(
      R"( {"a": [1, -2.5e3, true, false, null], "s": "q\"\\\/\n\u0041", "o": {}, "e": []} )");
  const auto& a = v.member("a", "doc").array("a");
  ASSERT_EQ(a.size(), 5u);
  EXPECT_EQ(a[0].number("a0"), 1);
  EXPECT_EQ(a[1].number("a1"), -2500);
  EXPECT_TRUE(a[2].boolean("a2"));
  EXPECT_FALSE(a[3].boolean("a3"));
  EXPECT_TRUE(a[4].is(JsonValue::Kind::kNull));
  EXPECT_EQ(v.member("s", "doc").string("s"), "q\"\\/\nA");
  EXPECT_TRUE(v.member("o", "doc").members("o").empty());
  EXPECT_TRUE(v.member("e", "doc").array("e").empty());
  EXPECT_EQ(v.find("missing"), nullptr);
}

TEST(JsonValue, RefusesMalformedTextNamingTheByte) {
  EXPECT_EQ(error_of("{\"a\": 1} x"), "malformed JSON at byte 9: expected the end of the text");
  EXPECT_EQ(error_of("{\"a\" 1}"), "malformed JSON at byte 5: expected ':'");
  EXPECT_EQ(error_of(""), "malformed JSON at byte 0: expected a value");
  EXPECT_EQ(error_of("[1,]"), "malformed JSON at byte 3: expected a value");
  EXPECT_EQ(error_of("\"abc"), "malformed JSON at byte 4: expected a closing '\"'");
  EXPECT_EQ(error_of("\"\\x\""), "malformed JSON at byte 3: expected a known escape");
  EXPECT_EQ(error_of("1."), "malformed JSON at byte 2: expected digits after '.'");
  EXPECT_EQ(error_of("1e999"), "malformed JSON at byte 5: expected a finite number");
  EXPECT_EQ(error_of("\"\\u+07f\""), "malformed JSON at byte 3: expected four hex digits");
  EXPECT_EQ(error_of("\"\\u0000\""),
            "malformed JSON at byte 3: expected \\u escape of an ASCII character other than NUL");
  EXPECT_EQ(error_of("{\"a\": 1, \"a\": 2}"), "malformed JSON at byte 13: expected no repeated member \"a\"");
  EXPECT_NE(error_of(std::string(100, '[')).find("less nesting"), std::string::npos);
}

TEST(JsonValue, AccessorsNameWhatIsWrong) {
  const JsonValue v = JsonValue::parse(R"({"n": "text"})");
  EXPECT_THROW(v.member("n", "doc").number("doc.n"), Error);
  try {
    v.member("x", "doc");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.message(), "doc: no member \"x\"");
  }
  EXPECT_EQ(json_quote("a\"b\\c\n\x01"), "\"a\\\"b\\\\c\\n\\u0001\"");
}

TuningFile sample() {
  TuningFile file;
  file.identity = {"1.2.3", "Some CPU \"x\"; 1 package, 4 cores, 8 PUs", "p=4;nodes=2,2,;hier=1"};
  file.created = "2026-12-02T00:00:00Z";
  file.ranks = 4;
  file.node_sizes = {2, 2};
  file.cores_shared = true;
  file.rounds = 7;
  AlgorithmCost flat;
  flat.measured = {{64, 2.5e-6}, {1 << 20, 3.125e-4}};
  flat.alpha_seconds = 2e-6;
  flat.beta_seconds_per_byte = 2.75e-10;
  file.collectives["allreduce"]["flat"] = flat;
  file.collectives["broadcast"]["hier"] = flat;
  return file;
}

TEST(TuningFile, RoundTripsThroughJson) {
  const TuningFile file = sample();
  const TuningFile back = TuningFile::parse(file.to_json());
  EXPECT_EQ(back.identity.library, file.identity.library);
  EXPECT_EQ(back.identity.host_kind, file.identity.host_kind);
  EXPECT_EQ(back.identity.layout, file.identity.layout);
  EXPECT_EQ(back.created, file.created);
  EXPECT_EQ(back.ranks, 4);
  EXPECT_EQ(back.node_sizes, file.node_sizes);
  EXPECT_TRUE(back.cores_shared);
  EXPECT_EQ(back.rounds, 7);
  const AlgorithmCost& flat = back.collectives.at("allreduce").at("flat");
  ASSERT_EQ(flat.measured.size(), 2u);
  EXPECT_EQ(flat.measured[1].bytes, 1u << 20);
  EXPECT_EQ(flat.measured[1].seconds, 3.125e-4);
  EXPECT_EQ(flat.alpha_seconds, 2e-6);
  EXPECT_EQ(flat.beta_seconds_per_byte, 2.75e-10);
  EXPECT_EQ(back.collectives.at("broadcast").count("hier"), 1u);
}

std::string parse_error(const std::string& from, const std::string& to) {
  std::string text = sample().to_json();
  const size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  text.replace(at, from.size(), to);
  try {
    TuningFile::parse(text);
  } catch (const Error& e) {
    return e.message();
  }
  return "";
}

TEST(TuningFile, RefusesBadContentNamingTheField) {
  EXPECT_EQ(parse_error("\"matex-tuning\"", "\"other\""), "not a tuning file: format is not \"matex-tuning\"");
  EXPECT_EQ(parse_error("\"version\": 1", "\"version\": 2"),
            "tuning file format version 2, this library reads 1 (run matex-tune again)");
  EXPECT_EQ(parse_error("\"layout\"", "\"lay\""), "tuning file: no member \"layout\"");
  EXPECT_EQ(parse_error("\"ranks\": 4", "\"ranks\": 4.5"), "ranks: expected a whole number from 0 to 1073741824");
  EXPECT_EQ(parse_error("\"cores_shared\": true", "\"cores_shared\": 1"), "cores_shared: expected true or false");
  EXPECT_EQ(parse_error("[[64, 2.5e-06], [1048576", "[[2048, 2.5e-06], [1048"),
            "collectives.allreduce.flat.measured[1]: sizes must grow");
  EXPECT_EQ(parse_error("[[64, 2.5e-06]", "[[64, 0]"), "collectives.allreduce.flat.measured[0]: expected seconds above 0");
  EXPECT_EQ(parse_error("[[64, 2.5e-06]", "[[64]"),
            "collectives.allreduce.flat.measured[0]: expected [bytes, seconds]");
  EXPECT_EQ(parse_error("[[64,", "[[0,"), "collectives.allreduce.flat.measured[0]: expected bytes above 0");
  EXPECT_EQ(parse_error("[[64,", "[[-64,"),
            "collectives.allreduce.flat.measured[0] bytes: expected a whole number from 0 to 9007199254740992");
}

TEST(TuningFile, MismatchNamesEachDifference) {
  const TuningIdentity here{"0.2.0", "CPU A; 1 package, 2 cores, 2 PUs", "p=4;nodes=2,2,;hier=1;cma=1"};
  EXPECT_EQ(tuning_mismatch(here, here), "");
  TuningIdentity file = here;
  file.library = "0.1.0";
  EXPECT_EQ(tuning_mismatch(file, here), "stale: written by libmatexcomm 0.1.0, this is 0.2.0");
  file = here;
  file.host_kind = "CPU B; 2 packages, 64 cores, 128 PUs";
  EXPECT_EQ(tuning_mismatch(file, here),
            "another host kind (CPU B; 2 packages, 64 cores, 128 PUs, here CPU A; 1 package, 2 cores, 2 PUs)");
  file = here;
  file.layout = "p=4;nodes=3,1,;hier=1;cma=0";
  EXPECT_EQ(tuning_mismatch(file, here), "measured for another layout (nodes 3,1, here 2,2, cma 0, here 1)");
  file.library = "0.1.0";
  EXPECT_EQ(tuning_mismatch(file, here),
            "stale: written by libmatexcomm 0.1.0, this is 0.2.0; measured for another layout (nodes 3,1, here "
            "2,2, cma 0, here 1)");
}

TEST(TuningFile, DefaultPathFollowsTheCacheDirectory) {
  {
    matex_test::ScopedEnv cache("XDG_CACHE_HOME", "/cache");
    EXPECT_EQ(default_tuning_path(), "/cache/matex/tuning.json");
  }
  matex_test::ScopedEnv no_cache("XDG_CACHE_HOME", nullptr);
  matex_test::ScopedEnv home("HOME", "/home/u");
  EXPECT_EQ(default_tuning_path(), "/home/u/.cache/matex/tuning.json");
}

TEST(CostFit, RecoversClosedFormCosts) {
  AlgorithmCost cost;
  for (uint64_t bytes = 64; bytes <= (64u << 20); bytes *= 4) {
    cost.measured.push_back({bytes, 3e-6 + 2e-10 * static_cast<double>(bytes)});
  }
  fit_alpha_beta(&cost);
  EXPECT_NEAR(cost.alpha_seconds, 3e-6, 3e-6 * 1e-9);
  EXPECT_NEAR(cost.beta_seconds_per_byte, 2e-10, 2e-10 * 1e-9);
}

TEST(CostFit, NeverNegative) {
  AlgorithmCost falling;  // time that shrinks with size: latency alone
  falling.measured = {{64, 5e-6}, {1024, 4e-6}, {16384, 3e-6}};
  fit_alpha_beta(&falling);
  EXPECT_EQ(falling.beta_seconds_per_byte, 0);
  EXPECT_NEAR(falling.alpha_seconds, 3.6e-6, 0.6e-6);
  AlgorithmCost steep;  // faster than linear from 0: bandwidth alone
  steep.measured = {{1024, 1e-7}, {1 << 20, 1e-3}};
  fit_alpha_beta(&steep);
  EXPECT_EQ(steep.alpha_seconds, 0);
  EXPECT_GT(steep.beta_seconds_per_byte, 0);
  AlgorithmCost one;
  one.measured = {{4096, 7e-6}};
  fit_alpha_beta(&one);
  EXPECT_GE(one.alpha_seconds, 0);
  EXPECT_GE(one.beta_seconds_per_byte, 0);
  EXPECT_NEAR(one.alpha_seconds + one.beta_seconds_per_byte * 4096, 7e-6, 1e-12);
}

}  // namespace
}  // namespace matexcomm
