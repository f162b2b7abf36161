// Unit tests of the engine's negotiation: what rank 0 decides from the ranks'
// announcements (order, fusion, disagreements, refusals, stalls, shutdown) and the wire
// format. No MPI: announcements are fed in directly.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "core/error.h"
#include "engine/negotiation.h"

namespace matexcomm {
namespace {

using Clock = Coordinator::Clock;

TensorSpec allreduce(uint64_t count, matex_dtype_t dtype = MATEX_FLOAT32, matex_op_t op = MATEX_SUM) {
  TensorSpec spec;
  spec.kind = TensorKind::kAllreduce;
  spec.dtype = dtype;
  spec.op = op;
  spec.count = count;
  return spec;
}

Announcement announce(std::vector<std::pair<std::string, TensorSpec>> entries, bool shutdown = false) {
  Announcement a;
  for (auto& [name, spec] : entries) {
    Announcement::Entry entry;
    entry.name = name;
    entry.spec = spec;
    a.entries.push_back(entry);
  }
  a.wants_shutdown = shutdown;
  return a;
}

TEST(Negotiation, ANameIsReadyOnlyOnceEveryRankAnnouncedIt) {
  Coordinator c(3, 1 << 20, 1 << 20);
  const auto now = Clock::now();
  c.add(0, announce({{"a", allreduce(4)}}), now);
  c.add(1, announce({{"a", allreduce(4)}}), now);
  EXPECT_TRUE(c.take_responses().empty());
  c.add(2, announce({{"a", allreduce(4)}}), now);
  const std::vector<Response> r = c.take_responses();
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].type, Response::Type::kExecute);
  EXPECT_EQ(r[0].names, std::vector<std::string>{"a"});
  EXPECT_FALSE(c.has_pending());
}

TEST(Negotiation, ReadyNamesLeaveInTheOrderTheyBecameReady) {
  Coordinator c(2, 0, 0);  // no fusion: one response per name
  const auto now = Clock::now();
  c.add(0, announce({{"x", allreduce(1)}, {"y", allreduce(1)}, {"z", allreduce(1)}}), now);
  c.add(1, announce({{"z", allreduce(1)}, {"x", allreduce(1)}, {"y", allreduce(1)}}), now);
  const std::vector<Response> r = c.take_responses();
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0].names[0], "z");  // rank 1 completed z first
  EXPECT_EQ(r[1].names[0], "x");
  EXPECT_EQ(r[2].names[0], "y");
}

TEST(Negotiation, FusionKeepsDtypeOpAndTheByteLimit) {
  Coordinator c(1, 100, 100);  // 100 bytes: 25 float32
  const auto now = Clock::now();
  c.add(0,
        announce({{"a", allreduce(10)},                           // 40 B
                  {"b", allreduce(10)},                           // 80 B: fused with a
                  {"c", allreduce(10)},                           // 120 B: starts anew
                  {"d", allreduce(2, MATEX_FLOAT64)},             // other dtype: anew
                  {"e", allreduce(2, MATEX_FLOAT64, MATEX_MAX)},  // other op: anew
                  {"f", allreduce(30)}}),                         // 120 B alone: never fused
        now);
  const std::vector<Response> r = c.take_responses();
  ASSERT_EQ(r.size(), 5u);
  EXPECT_EQ(r[0].names, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(r[1].names, std::vector<std::string>{"c"});
  EXPECT_EQ(r[2].names, std::vector<std::string>{"d"});
  EXPECT_EQ(r[3].names, std::vector<std::string>{"e"});
  EXPECT_EQ(r[4].names, std::vector<std::string>{"f"});
}

TEST(Negotiation, AFusionGroupStaysOpenAcrossBigTensors) {
  Coordinator c(1, 100, 40);  // groups of up to 100 B; tensors above 40 B run alone
  const auto now = Clock::now();
  c.add(0,
        announce({{"bias1", allreduce(2)},                   // 8 B: opens a group
                  {"weight1", allreduce(20)},                // 80 B: alone
                  {"bias2", allreduce(2)},                   // joins bias1's group, behind weight1
                  {"other", allreduce(2, MATEX_FLOAT64)},    // its own group
                  {"bias3", allreduce(10)},                  // 40 B: joins (48 B)
                  {"bias4", allreduce(10)},                  // 88 B: joins
                  {"bias5", allreduce(10)}}),                // 128 B: overflows, opens a new group
        now);
  const std::vector<Response> r = c.take_responses();
  ASSERT_EQ(r.size(), 4u);
  EXPECT_EQ(r[0].names, (std::vector<std::string>{"bias1", "bias2", "bias3", "bias4"}));
  EXPECT_EQ(r[1].names, std::vector<std::string>{"weight1"});
  EXPECT_EQ(r[2].names, std::vector<std::string>{"other"});
  EXPECT_EQ(r[3].names, std::vector<std::string>{"bias5"});
}

TEST(Negotiation, DisagreementQuotesEveryRank) {
  Coordinator c(2, 1 << 20, 1 << 20);
  const auto now = Clock::now();
  c.add(0, announce({{"w", allreduce(4)}}), now);
  c.add(1, announce({{"w", allreduce(5)}}), now);
  const std::vector<Response> r = c.take_responses();
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].type, Response::Type::kError);
  EXPECT_EQ(r[0].status, MATEX_ERR_MISMATCH);
  EXPECT_NE(r[0].error.find("'w'"), std::string::npos) << r[0].error;
  EXPECT_NE(r[0].error.find("rank 0: allreduce float32 sum count=4"), std::string::npos) << r[0].error;
  EXPECT_NE(r[0].error.find("rank 1: allreduce float32 sum count=5"), std::string::npos) << r[0].error;
}

TEST(Negotiation, AllgatherRowsMayDifferButNotTheirWidth) {
  TensorSpec rows;
  rows.kind = TensorKind::kAllgather;
  rows.dtype = MATEX_INT32;
  rows.row_elements = 3;
  Coordinator c(2, 1 << 20, 1 << 20);
  const auto now = Clock::now();
  rows.count = 2;
  c.add(0, announce({{"g", rows}}), now);
  rows.count = 5;
  c.add(1, announce({{"g", rows}}), now);
  std::vector<Response> r = c.take_responses();
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].type, Response::Type::kExecute);
  EXPECT_EQ(r[0].rows, (std::vector<uint64_t>{2, 5}));
  c.add(0, announce({{"h", rows}}), now);
  rows.row_elements = 4;
  c.add(1, announce({{"h", rows}}), now);
  r = c.take_responses();
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].type, Response::Type::kError);
  EXPECT_NE(r[0].error.find("row_elements=4"), std::string::npos) << r[0].error;
}

TEST(Negotiation, StallsNameTheMissingRanksAndCanFail) {
  Coordinator c(3, 1 << 20, 1 << 20);
  const auto start = Clock::now();
  c.add(1, announce({{"late", allreduce(1)}}), start);
  const auto later = start + std::chrono::seconds(5);
  const std::vector<Coordinator::Stalled> stalled = c.stalled(later, 2.0);
  ASSERT_EQ(stalled.size(), 1u);
  EXPECT_EQ(stalled[0].name, "late");
  EXPECT_EQ(stalled[0].missing, (std::vector<int>{0, 2}));
  EXPECT_TRUE(c.stalled(later, 10.0).empty());
  c.fail_stalled(later, 2.0);
  const std::vector<Response> r = c.take_responses();
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].status, MATEX_ERR_TIMEOUT);
  EXPECT_NE(r[0].error.find("rank(s) 0, 2"), std::string::npos) << r[0].error;
}

Announcement::Entry refusal(const std::string& name, matex_status_t status, const std::string& reason) {
  Announcement::Entry entry;
  entry.name = name;
  entry.spec = allreduce(0);
  entry.refusal_status = status;
  entry.refusal = reason;
  return entry;
}

TEST(Negotiation, ARefusalFailsTheNameEverywhereOnceEveryRankHasIt) {
  Coordinator c(3, 1 << 20, 1 << 20);
  const auto now = Clock::now();
  c.add(0, announce({{"r", allreduce(4, MATEX_INT32, MATEX_SUM)}}), now);
  Announcement refused;
  refused.entries.push_back(refusal("r", MATEX_ERR_INVALID_ARG, "int32 cannot be averaged"));
  c.add(1, refused, now);
  EXPECT_TRUE(c.take_responses().empty()) << "rank 2 has not submitted 'r' yet";
  c.add(2, announce({{"r", allreduce(4, MATEX_INT32, MATEX_SUM)}}), now);
  const std::vector<Response> r = c.take_responses();
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].type, Response::Type::kError);
  EXPECT_EQ(r[0].status, MATEX_ERR_INVALID_ARG);
  EXPECT_EQ(r[0].names, std::vector<std::string>{"r"});
  EXPECT_NE(r[0].error.find("tensor 'r'"), std::string::npos) << r[0].error;
  EXPECT_NE(r[0].error.find("rank 1: int32 cannot be averaged"), std::string::npos) << r[0].error;
  EXPECT_EQ(r[0].error.find("rank 0"), std::string::npos) << r[0].error;
  EXPECT_FALSE(c.has_pending());
}

TEST(Negotiation, SeveralRefusalsAreAllQuotedWithTheLowestRanksStatus) {
  Coordinator c(3, 1 << 20, 1 << 20);
  const auto now = Clock::now();
  Announcement first, last;
  first.entries.push_back(refusal("r", MATEX_ERR_UNSUPPORTED, "no such op"));
  last.entries.push_back(refusal("r", MATEX_ERR_INVALID_ARG, "bad shape"));
  c.add(2, last, now);
  c.add(1, announce({{"r", allreduce(9)}}), now);
  c.add(0, first, now);
  const std::vector<Response> r = c.take_responses();
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].status, MATEX_ERR_UNSUPPORTED);
  EXPECT_NE(r[0].error.find("rank 0: no such op; rank 2: bad shape"), std::string::npos) << r[0].error;
}

TensorSpec shaped(TensorSpec spec, std::vector<int64_t> shape) {
  spec.shape = std::move(shape);
  return spec;
}

TEST(Negotiation, ShapesOfOneCountMustAgreeWhereGiven) {
  Coordinator c(3, 0, 0);
  const auto now = Clock::now();
  const TensorSpec flat = allreduce(17 * 1311);
  c.add(0, announce({{"s", shaped(flat, {17, 1311})}, {"same", shaped(flat, {17, 1311})}}), now);
  c.add(1, announce({{"s", shaped(flat, {17, 23, 57})}, {"same", flat}}), now);  // "same": rank 1 gives none
  c.add(2, announce({{"s", shaped(flat, {17, 1311})}, {"same", shaped(flat, {17, 1311})}}), now);
  const std::vector<Response> r = c.take_responses();
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].type, Response::Type::kError);
  EXPECT_EQ(r[0].status, MATEX_ERR_MISMATCH);
  EXPECT_NE(r[0].error.find("rank 0: allreduce float32 sum count=22287 shape=[17, 1311]"), std::string::npos)
      << r[0].error;
  EXPECT_NE(r[0].error.find("rank 1: allreduce float32 sum count=22287 shape=[17, 23, 57]"), std::string::npos)
      << r[0].error;
  EXPECT_EQ(r[1].type, Response::Type::kExecute) << r[1].error;
}

TEST(Negotiation, AllgatherShapesAgreePastTheirFirstExtent) {
  TensorSpec rows;
  rows.kind = TensorKind::kAllgather;
  rows.row_elements = 6;
  TensorSpec a = rows, b = rows, c = rows;
  a.count = 1, a.shape = {1, 2, 3};
  b.count = 4, b.shape = {4, 2, 3};
  c.count = 4, c.shape = {4, 3, 2};
  EXPECT_TRUE(a.agrees_with(b));
  EXPECT_FALSE(a.agrees_with(c));
  EXPECT_FALSE(a.agrees_exactly(b));
}

Announcement joining() {
  TensorSpec spec;
  spec.kind = TensorKind::kJoin;
  return announce({{kJoinName, spec}});
}

TEST(Negotiation, AJoinedRankCountsAsHavingAnnouncedAllreducesWithItsSpec) {
  Coordinator c(3, 1 << 20, 1 << 20);
  const auto now = Clock::now();
  // "early" waits for rank 1 only; rank 1's join makes it ready. Then "late", announced by the others
  // after the join, is ready without rank 1; both carry the spec the joined rank stands in with.
  c.add(0, announce({{"early", allreduce(5, MATEX_INT32)}}), now);
  c.add(2, announce({{"early", allreduce(5, MATEX_INT32)}}), now);
  EXPECT_TRUE(c.take_responses().empty());
  c.add(1, joining(), now);
  std::vector<Response> r = c.take_responses();
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].type, Response::Type::kExecute);
  EXPECT_EQ(r[0].names, std::vector<std::string>{"early"});
  ASSERT_EQ(r[0].specs.size(), 1u);
  EXPECT_TRUE(r[0].specs[0].agrees_exactly(allreduce(5, MATEX_INT32)));
  c.add(0, announce({{"late.a", allreduce(3)}, {"late.b", allreduce(4)}}), now);
  c.add(2, announce({{"late.a", allreduce(3)}, {"late.b", allreduce(4)}}), now);
  r = c.take_responses();
  ASSERT_EQ(r.size(), 1u) << "one fused response";
  EXPECT_EQ(r[0].names, (std::vector<std::string>{"late.a", "late.b"}));
  ASSERT_EQ(r[0].specs.size(), 2u);
  EXPECT_EQ(r[0].specs[1].count, 4u);
  EXPECT_FALSE(c.has_pending());
}

TEST(Negotiation, BroadcastsAndAllgathersFailWhileARankHasJoined) {
  Coordinator c(3, 1 << 20, 1 << 20);
  const auto now = Clock::now();
  TensorSpec bcast;
  bcast.kind = TensorKind::kBroadcast;
  bcast.count = 7;
  TensorSpec gather;
  gather.kind = TensorKind::kAllgather;
  gather.count = 2;
  c.add(2, joining(), now);
  c.add(0, announce({{"b", bcast}, {"g", gather}}), now);
  c.add(1, announce({{"b", bcast}, {"g", gather}}), now);
  const std::vector<Response> r = c.take_responses();
  ASSERT_EQ(r.size(), 2u);
  for (const Response& response : r) {
    EXPECT_EQ(response.type, Response::Type::kError);
    EXPECT_EQ(response.status, MATEX_ERR_INVALID_ARG);
    EXPECT_NE(response.error.find("while rank(s) 2 have joined"), std::string::npos) << response.error;
  }
}

TEST(Negotiation, AJoinedRankDoesNotStandInForGpuTensors) {
  Coordinator c(2, 1 << 20, 1 << 20);
  const auto now = Clock::now();
  TensorSpec on_gpu = allreduce(8);
  on_gpu.device = true;
  c.add(1, joining(), now);
  c.add(0, announce({{"gpu", on_gpu}}), now);
  const std::vector<Response> r = c.take_responses();
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].type, Response::Type::kError);
  EXPECT_EQ(r[0].status, MATEX_ERR_UNSUPPORTED);
  EXPECT_NE(r[0].error.find("GPU memory, and rank(s) 1 have joined"), std::string::npos) << r[0].error;
}

TEST(Negotiation, TheJoinEndsOnceEveryRankHasJoinedNamingTheLast) {
  Coordinator c(3, 1 << 20, 1 << 20);
  const auto now = Clock::now();
  c.add(2, joining(), now);
  c.add(0, joining(), now);
  c.add(1, announce({{"x", allreduce(2)}}), now);  // with ranks 0 and 2 joined, x runs at once
  std::vector<Response> r = c.take_responses();
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].names, std::vector<std::string>{"x"});
  c.add(1, joining(), now);
  r = c.take_responses();
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].type, Response::Type::kJoin);
  EXPECT_EQ(r[0].rows, std::vector<uint64_t>{1});
  // The joins are over: a name needs every rank again.
  c.add(0, announce({{"y", allreduce(2)}}), now);
  c.add(1, announce({{"y", allreduce(2)}}), now);
  EXPECT_TRUE(c.take_responses().empty());
  ASSERT_EQ(c.stalled(now + std::chrono::seconds(10), 1.0).size(), 1u);
  EXPECT_EQ(c.stalled(now + std::chrono::seconds(10), 1.0)[0].missing, std::vector<int>{2});
}

TEST(Negotiation, ShutdownByEveryRankNamesNoRank) {
  Coordinator c(2, 1 << 20, 1 << 20);
  const auto now = Clock::now();
  c.add(0, announce({}, true), now);
  c.add(1, announce({}, true), now);
  const std::vector<Response> r = c.take_responses();
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].type, Response::Type::kShutdown);
  EXPECT_EQ(r[0].error, "");
}

// A rank whose program ended while the others still submit: waiting for its vote, or for tensors it will
// never announce, would hang them all. What every rank announced still runs, before the shutdown.
TEST(Negotiation, OneRanksShutdownEndsTheEngineEverywhere) {
  Coordinator c(3, 1 << 20, 1 << 20);
  const auto now = Clock::now();
  for (int r = 0; r < 3; ++r) c.add(r, announce({{"everyone", allreduce(4)}}), now);
  c.add(0, announce({{"without_rank_2", allreduce(4)}}), now);
  c.add(1, announce({{"without_rank_2", allreduce(4)}}), now);
  c.add(2, announce({}, true), now);
  const std::vector<Response> r = c.take_responses();
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].type, Response::Type::kExecute);
  EXPECT_EQ(r[0].names, std::vector<std::string>{"everyone"});
  EXPECT_EQ(r[1].type, Response::Type::kShutdown);
  EXPECT_NE(r[1].error.find("rank 2 shut it down"), std::string::npos) << r[1].error;
}

TEST(Negotiation, ShutdownNamesEveryRankThatVoted) {
  Coordinator c(4, 1 << 20, 1 << 20);
  const auto now = Clock::now();
  c.add(1, announce({}, true), now);
  c.add(3, announce({}, true), now);
  const std::vector<Response> r = c.take_responses();
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].type, Response::Type::kShutdown);
  EXPECT_NE(r[0].error.find("ranks 1, 3 shut it down"), std::string::npos) << r[0].error;
}

TEST(Negotiation, WireFormatRoundTrips) {
  Announcement a = announce({{"grad/w", allreduce(123, MATEX_BFLOAT16, MATEX_AVG)}, {"", allreduce(0)}}, true);
  const Announcement back = Announcement::decode(a.encode());
  ASSERT_EQ(back.entries.size(), 2u);
  EXPECT_EQ(back.entries[0].name, "grad/w");
  EXPECT_TRUE(back.entries[0].spec.agrees_exactly(a.entries[0].spec));
  EXPECT_EQ(back.entries[0].refusal_status, MATEX_SUCCESS);
  EXPECT_TRUE(back.wants_shutdown);
  Announcement with_refusal;
  with_refusal.entries.push_back(refusal("grad/b", MATEX_ERR_MISMATCH, "shape [2, 3], not [3, 2]"));
  const Announcement refusal_back = Announcement::decode(with_refusal.encode());
  ASSERT_EQ(refusal_back.entries.size(), 1u);
  EXPECT_EQ(refusal_back.entries[0].refusal_status, MATEX_ERR_MISMATCH);
  EXPECT_EQ(refusal_back.entries[0].refusal, "shape [2, 3], not [3, 2]");
  Announcement with_shape = announce({{"x", shaped(allreduce(6), {2, 3})}, {"y", allreduce(6)}});
  const Announcement shape_back = Announcement::decode(with_shape.encode());
  EXPECT_EQ(shape_back.entries[0].spec.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_TRUE(shape_back.entries[1].spec.shape.empty());

  Response r;
  r.type = Response::Type::kError;
  r.names = {"a", "b"};
  r.rows = {3, 0, 7};
  r.specs = {allreduce(3, MATEX_INT64, MATEX_MAX), shaped(allreduce(6), {2, 3})};
  r.error = "bad";
  r.status = MATEX_ERR_TIMEOUT;
  const std::vector<Response> decoded = decode_responses(encode_responses({r, Response{}}));
  ASSERT_EQ(decoded.size(), 2u);
  EXPECT_EQ(decoded[0].names, r.names);
  EXPECT_EQ(decoded[0].rows, r.rows);
  ASSERT_EQ(decoded[0].specs.size(), 2u);
  EXPECT_TRUE(decoded[0].specs[0].agrees_exactly(r.specs[0]));
  EXPECT_TRUE(decoded[0].specs[1].agrees_exactly(r.specs[1]));
  EXPECT_TRUE(decoded[1].specs.empty());
  EXPECT_EQ(decoded[0].error, "bad");
  EXPECT_EQ(decoded[0].status, MATEX_ERR_TIMEOUT);
  EXPECT_THROW(Announcement::decode(std::string("\x01\x05", 2)), Error);  // truncated
}

}  // namespace
}  // namespace matexcomm
