// test_selection.cc - how auto chooses: the allreduce table measured at
// creation (MATEX_CALIBRATE=init) is the same on every rank and gives exact
// results, a second communicator of the same shape reuses it, and
// MATEX_CALIBRATE=off keeps the fixed sizes. Trials settle on the same
// algorithm on every rank, whatever each rank's placement.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "matexcomm/matexcomm.h"
#include "matexcomm/matexcomm_mpi.h"
#include "mpi_test_util.h"

namespace matex_test {
namespace {

std::string selection_of(matex_comm_t comm) {
  const char* text = nullptr;
  EXPECT_EQ(matex_describe_selection(comm, &text), MATEX_SUCCESS) << matex_last_error();
  return text != nullptr ? text : "";
}

// True on every rank when every rank passed the same text.
bool same_on_every_rank(const std::string& text) {
  uint64_t hash = 1469598103934665603ull;  // FNV-1a
  for (unsigned char c : text) hash = (hash ^ c) * 1099511628211ull;
  uint64_t low = 0, high = 0;
  MPI_Allreduce(&hash, &low, 1, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(&hash, &high, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
  return low == high;
}

// A float sum allreduce of `count` elements, element i of rank r being
// value(i, r) (small integers: the sums are exact), in place or not; returns
// the wrong elements of the result, all of them if the call failed.
template <class Value>
long long checked_allreduce(matex_comm_t comm, size_t count, bool in_place, Value value) {
  std::vector<float> send(count), recv(count, -1.0f);
  for (size_t i = 0; i < count; ++i) send[i] = static_cast<float>(value(i, world_rank()));
  if (in_place) recv = send;
  const matex_status_t status =
      matex_allreduce(comm, in_place ? MATEX_IN_PLACE : send.data(), recv.data(), count, MATEX_FLOAT32, MATEX_SUM);
  EXPECT_EQ(status, MATEX_SUCCESS) << "count " << count << ": " << matex_last_error();
  if (status != MATEX_SUCCESS) return static_cast<long long>(count) + 1;
  long long errors = 0;
  for (size_t i = 0; i < count; ++i) {
    float expected = 0;
    for (int r = 0; r < world_size(); ++r) expected += static_cast<float>(value(i, r));
    errors += recv[i] != expected;
  }
  return errors;
}

// auto's allreduce at sizes from 0 to 4 GiB, as "bytes=name;" pairs.
std::string auto_choices(matex_comm_t comm) {
  std::string choices;
  for (size_t bytes : {size_t{0}, size_t{4}, size_t{64}, size_t{1000}, size_t{1024}, size_t{1025}, size_t{16384},
                       size_t{65536}, size_t{262147}, size_t{1} << 20, size_t{3} << 22, size_t{1} << 26,
                       size_t{1} << 32}) {
    const char* name = "";
    EXPECT_EQ(matex_auto_algorithm(comm, MATEX_COLL_ALLREDUCE, bytes, &name), MATEX_SUCCESS) << matex_last_error();
    choices += std::to_string(bytes) + "=" + name + ";";
  }
  return choices;
}

struct Shape {
  int size = 0;
  int nodes = 0;
  bool shared_memory = false;  // the hierarchy works: a forced rs_ar_ag stays rs_ar_ag
  bool nothing_to_choose() const { return size == 1 || !shared_memory; }
  // One rank per node: only a measured table chooses; the fixed sizes run flat.
  bool one_per_node() const { return nodes == size; }
};

// Collective: probes the hierarchy by forcing rs_ar_ag for a moment.
Shape shape_of(matex_comm_t comm) {
  Shape shape;
  matex_comm_size(comm, &shape.size);
  matex_comm_node_count(comm, &shape.nodes);
  const char* name = "";
  EXPECT_EQ(matex_set_algorithm(comm, MATEX_COLL_ALLREDUCE, "rs_ar_ag"), MATEX_SUCCESS) << matex_last_error();
  matex_auto_algorithm(comm, MATEX_COLL_ALLREDUCE, 1 << 20, &name);
  shape.shared_memory = std::string(name) == "rs_ar_ag";
  EXPECT_EQ(matex_set_algorithm(comm, MATEX_COLL_ALLREDUCE, "auto"), MATEX_SUCCESS) << matex_last_error();
  return shape;
}

// Sums of small integers, exact in float32: the closed form is the reference.
long long allreduce_errors(matex_comm_t comm, size_t count) {
  std::vector<float> send(count), recv(count, -1.0f);
  for (size_t i = 0; i < count; ++i) send[i] = static_cast<float>((i + world_rank()) % 8);
  if (matex_allreduce(comm, send.data(), recv.data(), count, MATEX_FLOAT32, MATEX_SUM) != MATEX_SUCCESS) {
    ADD_FAILURE() << "count " << count << ": " << matex_last_error();
    return 1;
  }
  long long wrong = 0;
  for (size_t i = 0; i < count; ++i) {
    float expected = 0;
    for (int r = 0; r < world_size(); ++r) expected += static_cast<float>((i + r) % 8);
    wrong += recv[i] != expected;
  }
  EXPECT_EQ(wrong, 0) << "count " << count;
  return wrong;
}

TEST(Selection, EveryRankHoldsTheSameTable) {
  ScopedEnv measured("MATEX_CALIBRATE", "init");
  matex_comm_t comm = nullptr;
  ASSERT_EQ(matex_init_mpi(MPI_COMM_WORLD, &comm), MATEX_SUCCESS) << matex_last_error();
  const char* last = "?";
  EXPECT_EQ(matex_last_algorithm(comm, MATEX_COLL_ALLREDUCE, &last), MATEX_SUCCESS);
  EXPECT_STREQ(last, "") << "the measurement's calls count as the caller's";
  const std::string text = selection_of(comm);
  const std::string choices = auto_choices(comm);
  EXPECT_TRUE(same_on_every_rank(text)) << text;
  EXPECT_TRUE(same_on_every_rank(choices)) << choices;
  const Shape shape = shape_of(comm);
  if (shape.nothing_to_choose()) {
    EXPECT_NE(text.find("allreduce under auto: flat"), std::string::npos) << text;
  } else {
    // Shared memory works here, so the table was measured (or reused).
    EXPECT_NE(text.find("measured at init"), std::string::npos) << text;
    if (shape.nodes > 1) {
      EXPECT_EQ(choices.find("oneshot"), std::string::npos) << "oneshot on several nodes: " << choices;
    }
  }
  // Counts in every band the table may draw: 0, 1, primes, uneven sizes.
  long long errors = 0;
  for (size_t count : {size_t{0}, size_t{1}, size_t{13}, size_t{257}, size_t{4099}, size_t{65537}, size_t{262147},
                       size_t{1048573}}) {
    errors += allreduce_errors(comm, count);
  }
  agree_no_errors(errors, "allreduce under the measured table");
  EXPECT_EQ(matex_finalize(&comm), MATEX_SUCCESS) << matex_last_error();
}

// The table lists its timings: a second measurement would differ in them.
TEST(Selection, ASecondCommunicatorOfTheSameShapeReusesTheTable) {
  ScopedEnv measured("MATEX_CALIBRATE", "init");
  matex_comm_t first = nullptr, second = nullptr;
  ASSERT_EQ(matex_init_mpi(MPI_COMM_WORLD, &first), MATEX_SUCCESS) << matex_last_error();
  ASSERT_EQ(matex_init_mpi(MPI_COMM_WORLD, &second), MATEX_SUCCESS) << matex_last_error();
  EXPECT_EQ(selection_of(first), selection_of(second));
  EXPECT_EQ(auto_choices(first), auto_choices(second));
  EXPECT_EQ(matex_finalize(&second), MATEX_SUCCESS) << matex_last_error();
  EXPECT_EQ(matex_finalize(&first), MATEX_SUCCESS) << matex_last_error();
}

// The fixed rule, from the defaults: the small family up to
// MATEX_RAB_MAX_BYTES (1 KiB), then rs_ar_ag, rs_ar_ag_cma from
// MATEX_CMA_MIN_BYTES (64 KiB) where cross-memory attach works.
TEST(Selection, OffKeepsTheFixedSizes) {
  ScopedEnv off("MATEX_CALIBRATE", "off");
  matex_comm_t comm = nullptr;
  ASSERT_EQ(matex_init_mpi(MPI_COMM_WORLD, &comm), MATEX_SUCCESS) << matex_last_error();
  const Shape shape = shape_of(comm);
  const std::string text = selection_of(comm);
  const char* small = "";
  const char* middle = "";
  const char* large = "";
  matex_auto_algorithm(comm, MATEX_COLL_ALLREDUCE, 1024, &small);
  matex_auto_algorithm(comm, MATEX_COLL_ALLREDUCE, 1025, &middle);
  matex_auto_algorithm(comm, MATEX_COLL_ALLREDUCE, 1 << 20, &large);
  if (shape.nothing_to_choose() || shape.one_per_node()) {
    EXPECT_STREQ(small, "flat");
    EXPECT_STREQ(large, "flat");
  } else {
    EXPECT_NE(text.find("fixed sizes (no measured table"), std::string::npos) << text;
    // One node: oneshot up to MATEX_RAB_MAX_BYTES. Several: flat up to 16 KiB
    // (carried in the call check), then the rail family.
    const char* above_flat = "";
    matex_auto_algorithm(comm, MATEX_COLL_ALLREDUCE, 16385, &above_flat);
    EXPECT_STREQ(small, shape.nodes == 1 ? "oneshot" : "flat");
    EXPECT_STREQ(middle, shape.nodes == 1 ? "rs_ar_ag" : "flat");
    EXPECT_STREQ(above_flat, "rs_ar_ag");
    EXPECT_TRUE(std::string(large) == "rs_ar_ag_cma" || std::string(large) == "rs_ar_ag") << large;
  }
  EXPECT_EQ(matex_finalize(&comm), MATEX_SUCCESS) << matex_last_error();
}

// The fixed sizes, with trials: the first calls of a size group run each
// contender once (the rule's pick first), then the rule's pick and one other
// again; from then on one of the two runs, the same on every rank.
// MATEX_CMA_MAX_BYTES is set below the larger size, where the size rule
// alone would run rs_ar_ag out of place and rs_ar_ag_cma in place: ranks of
// a node that differ in placement (odd calls: in place on even ranks) would
// then run different algorithms and fail with MATEX_ERR_MISMATCH. Every sum
// is exact.
TEST(Selection, TrialsSettleAlikeOnEveryRank) {
  ScopedEnv no_file("MATEX_TUNING_FILE", "/nonexistent/matex-tuning.json");  // auto: the fixed sizes
  ScopedEnv placement_splits("MATEX_CMA_MAX_BYTES", "512K");
  matex_comm_t comm = nullptr;
  ASSERT_EQ(matex_init_mpi(MPI_COMM_WORLD, &comm), MATEX_SUCCESS) << matex_last_error();
  const Shape shape = shape_of(comm);
  const bool trials = !shape.nothing_to_choose();
  const int calls = 9;  // at most 4 contenders: 6 trials, then the settled choice
  // 1 MiB and 12 B, 256 KiB and 4 B, 4 KiB and 28 B, 256 B.
  for (size_t count : {size_t{262147}, size_t{65537}, size_t{1031}, size_t{64}}) {
    const char* before = "";
    matex_auto_algorithm(comm, MATEX_COLL_ALLREDUCE, count * sizeof(float), &before);
    std::vector<std::string> ran;
    long long errors = 0;
    for (int call = 0; call < calls; ++call) {
      const bool in_place = call % 2 == 1 && world_rank() % 2 == 0;
      errors += checked_allreduce(comm, count, in_place, [call](size_t i, int r) { return (i + r + call) % 8; });
      const char* name = "";
      matex_last_algorithm(comm, MATEX_COLL_ALLREDUCE, &name);
      ran.push_back(name);
    }
    agree_no_errors(errors, "allreduce during and after the trials, count " + std::to_string(count));
    std::string sequence;
    for (const std::string& name : ran) sequence += name + ";";
    EXPECT_TRUE(same_on_every_rank(sequence)) << sequence;
    const char* settled = "";
    matex_auto_algorithm(comm, MATEX_COLL_ALLREDUCE, count * sizeof(float), &settled);
    EXPECT_EQ(ran[0], before) << "the rule's pick runs first: " << sequence;
    if (!trials) {
      for (const std::string& name : ran) EXPECT_EQ(name, ran[0]) << "count " << count << ": " << sequence;
      continue;
    }
    // Round one: each contender once, until a name comes back (round two's challenger).
    size_t contenders = 1;
    while (contenders < ran.size() && std::find(ran.begin(), ran.begin() + contenders, ran[contenders]) ==
                                          ran.begin() + contenders) {
      ++contenders;
    }
    if (contenders == 1) {
      // Nothing to try: only where one node without cross-memory attach has
      // rs_ar_ag alone above the small algorithms' sizes.
      EXPECT_TRUE(shape.nodes == 1 && ran[0] == "rs_ar_ag" && count * sizeof(float) > 80 * 1024) << sequence;
      for (const std::string& name : ran) EXPECT_EQ(name, ran[0]) << sequence;
      continue;
    }
    ASSERT_GE(contenders, 2u) << sequence;
    ASSERT_LE(contenders, 4u) << sequence;
    for (size_t i = 0; i < contenders; ++i)
      for (size_t j = i + 1; j < contenders; ++j) EXPECT_NE(ran[i], ran[j]) << "round one repeats: " << sequence;
    // On several nodes MPI's own allreduce contends.
    const bool flat_contends = std::find(ran.begin(), ran.begin() + contenders, "flat") != ran.begin() + contenders;
    EXPECT_EQ(flat_contends, shape.nodes > 1) << sequence;
    // Round two: one other first (the call behind the agreement), then the rule's pick; then the
    // settled choice, one of the two.
    const std::string challenger = ran[contenders];
    EXPECT_NE(std::find(ran.begin() + 1, ran.begin() + contenders, challenger), ran.begin() + contenders) << sequence;
    EXPECT_EQ(ran[contenders + 1], ran[0]) << "round two ends with the rule's pick: " << sequence;
    EXPECT_TRUE(settled == ran[0] || settled == challenger) << settled << " after " << sequence;
    // The watch may start the trials again after its first window, which has
    // 2 calls at least (AllreduceTrials::kMinWatchCalls).
    for (size_t call = contenders + 2; call < std::min(ran.size(), contenders + 4); ++call)
      EXPECT_EQ(ran[call], settled) << sequence;
  }
  const std::string text = selection_of(comm);
  EXPECT_TRUE(same_on_every_rank(text)) << text;
  EXPECT_EQ(text.find("settled so far") != std::string::npos, trials) << text;
  EXPECT_EQ(matex_finalize(&comm), MATEX_SUCCESS) << matex_last_error();
}

// The watch (select/allreduce_trials.h) starts the trials again when a
// window's calls drift from the settled figures or move to another
// placement. Whether and when it does depends on timing; what must hold is
// that every rank does it at the same call, whatever each rank's placement,
// and that every result stays exact. Three phases per size: out of place,
// in place on every rank, then mixed.
TEST(Selection, TheWatchStartsTheTrialsAgainAlikeOnEveryRank) {
  ScopedEnv no_file("MATEX_TUNING_FILE", "/nonexistent/matex-tuning.json");
  matex_comm_t comm = nullptr;
  ASSERT_EQ(matex_init_mpi(MPI_COMM_WORLD, &comm), MATEX_SUCCESS) << matex_last_error();
  const int phase_calls = 24;
  // 1 MiB and 12 B, 64 KiB and 4 B, 4 KiB and 28 B.
  for (size_t count : {size_t{262147}, size_t{16385}, size_t{1031}}) {
    std::string sequence;
    long long errors = 0;
    for (int call = 0; call < 3 * phase_calls; ++call) {
      const int phase = call / phase_calls;
      const bool in_place = phase == 1 || (phase == 2 && (world_rank() + call) % 2 == 0);
      errors += checked_allreduce(comm, count, in_place, [call](size_t i, int r) { return (i * 3 + r + call) % 16; });
      const char* name = "";
      matex_last_algorithm(comm, MATEX_COLL_ALLREDUCE, &name);
      sequence += std::string(name) + ";";
    }
    agree_no_errors(errors, "allreduce under the watch, count " + std::to_string(count));
    EXPECT_TRUE(same_on_every_rank(sequence)) << "count " << count << ": " << sequence;
  }
  const std::string text = selection_of(comm);
  EXPECT_TRUE(same_on_every_rank(text)) << text;
  if (text.find("at once when a window") != std::string::npos) {
    // Where the watch runs, the 1 MiB group was timed again at the latest
    // when phase 1's in-place calls ended a window, new to phase 0's trials.
    const size_t line = text.find("[1 MiB, 1.25 MiB)");
    ASSERT_NE(line, std::string::npos) << text;
    const std::string group = text.substr(line, text.find('\n', line) - line);
    EXPECT_NE(group.find("timed again"), std::string::npos) << text;
  }
  EXPECT_EQ(matex_finalize(&comm), MATEX_SUCCESS) << matex_last_error();
}

TEST(Selection, AForcedAlgorithmWinsOverTheTable) {
  ScopedEnv measured("MATEX_CALIBRATE", "init");
  matex_comm_t comm = nullptr;
  ASSERT_EQ(matex_init_mpi(MPI_COMM_WORLD, &comm), MATEX_SUCCESS) << matex_last_error();
  const Shape shape = shape_of(comm);  // before forcing: the probe sets auto back
  ASSERT_EQ(matex_set_algorithm(comm, MATEX_COLL_ALLREDUCE, "rs_ar_ag"), MATEX_SUCCESS) << matex_last_error();
  for (size_t bytes : {size_t{4}, size_t{1} << 20}) {
    const char* name = "";
    matex_auto_algorithm(comm, MATEX_COLL_ALLREDUCE, bytes, &name);
    // A single rank, or no shared memory, runs flat whatever is forced.
    EXPECT_STREQ(name, shape.shared_memory ? "rs_ar_ag" : "flat") << bytes << " B";
  }
  EXPECT_NE(selection_of(comm).find("forced to rs_ar_ag"), std::string::npos) << selection_of(comm);
  EXPECT_EQ(matex_finalize(&comm), MATEX_SUCCESS) << matex_last_error();
}

}  // namespace
}  // namespace matex_test
