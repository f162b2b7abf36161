// negotiation.h - what ranks tell the coordinator about their tensors, what
// the coordinator answers, and the coordinator itself.
//
// Every engine cycle each rank sends rank 0 an Announcement: the tensors it
// has been handed since the last cycle (name plus TensorSpec) and whether it
// wants to shut down. Rank 0's Coordinator collects them. A name is ready once
// every rank has announced it; ready names leave in the order they became
// ready (ties in announcement order), so every rank executes the same
// operations in the same order. A ready name whose specs differ becomes an
// error response that quotes every rank's spec; one that a rank refused (its
// own checks failed before it could submit the tensor) becomes an error
// response, with that rank's status, that names the rank and quotes its reason. Consecutive ready allreduces
// of one dtype and op are fused into one response of up to `fusion_bytes`.
//
// Join: a rank that has no more tensors to submit announces a join (kJoinName). From then on it counts
// as having announced every name: allreduces run with its zeros (it executes them with stand-in buffers
// from the response's specs), and a broadcast or allgather while some rank has joined fails on every
// rank. Once every rank has joined, a kJoin response names the rank that joined last, and the joins end.
// Shutdown: one rank's vote ends the engine on every rank (a kShutdown response, whose error names the
// ranks that voted unless all did). Every tensor needs every rank, so a tensor that a rank which shut
// down has not announced can never run: its submitters must not wait for it, and neither may the rank
// that shut down wait for the others to vote (ranks may shut down several engines in different orders).
// The coordinator also remembers since when a name has waited for the ranks
// that have not announced it (the stall inspector reads that).
//
// Wire format: little-endian fields packed back to back (all ranks run the
// same build of this library, so no versioning is needed).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "matexcomm/matexcomm.h"

namespace matexcomm {

enum class TensorKind : int32_t { kAllreduce = 0, kBroadcast = 1, kAllgather = 2, kJoin = 3 };

// The one name under which a rank submits its join; no tensor may take it.
inline constexpr const char* kJoinName = "matex.engine.join";

// What must agree across ranks for one named tensor.
struct TensorSpec {
  TensorKind kind = TensorKind::kAllreduce;
  int32_t dtype = MATEX_FLOAT32;
  int32_t op = MATEX_SUM;  // allreduce only
  int32_t root = 0;        // broadcast only
  uint64_t count = 0;      // elements; allgather: this rank's rows (may differ between ranks)
  uint64_t row_elements = 1;  // allgather: elements per row (must agree); 1 otherwise
  // The tensor's dimensions where the caller gave them (matex_engine_submit_shaped), else empty. Ranks
  // that all give one must agree on it (an allgather on every dimension but the first).
  std::vector<int64_t> shape;
  bool device = false;  // an allreduce's buffer is in GPU memory on the announcing rank (a joined rank
                        // cannot stand in for it)

  bool agrees_with(const TensorSpec& other) const;    // as the ranks must (allgather rows may differ)
  bool shapes_agree(const TensorSpec& other) const;   // given on both: equal (allgather: past dimension 0)
  bool agrees_exactly(const TensorSpec& other) const;  // every field
  size_t bytes() const;          // count * row_elements * dtype size
  std::string describe() const;  // "allreduce float32 sum count=10"
};

struct Announcement {
  struct Entry {
    std::string name;
    TensorSpec spec;
    int32_t refusal_status = MATEX_SUCCESS;  // otherwise: this rank refused the tensor, for `refusal`
    std::string refusal;
  };
  std::vector<Entry> entries;
  bool wants_shutdown = false;

  std::string encode() const;
  static Announcement decode(const std::string& bytes);
};

struct Response {
  enum class Type : int32_t { kExecute = 0, kError = 1, kShutdown = 2, kJoin = 3 };
  Type type = Type::kExecute;
  TensorKind kind = TensorKind::kAllreduce;
  std::vector<std::string> names;  // more than one: fused allreduce, in buffer order
  std::vector<TensorSpec> specs;   // kExecute: each name's spec (what a joined rank stands in with)
  std::vector<uint64_t> rows;      // allgather: every rank's row count; kJoin: the rank that joined last
  std::string error;               // kError: the message every rank's handles fail with
  int32_t status = MATEX_SUCCESS;  // kError: MATEX_ERR_MISMATCH, MATEX_ERR_TIMEOUT for a stall, or a refusal's
};

std::string encode_responses(const std::vector<Response>& responses);
std::vector<Response> decode_responses(const std::string& bytes);

// Appends operations to a response list, fusing allreduces of one dtype and
// op into one response while the sum stays within the limit. A fusion group
// stays open across other responses (the small bias and scale tensors of a
// network alternate with big weights), at the position where it was opened;
// it closes when the next tensor of its kind would overflow it.
class Fuser {
 public:
  // Tensors above tensor_limit bytes are never fused: on CPUs packing them
  // would cost more memory bandwidth than their own collective's latency.
  Fuser(std::vector<Response>* out, size_t fusion_bytes, size_t tensor_limit)
      : out_(out), fusion_bytes_(fusion_bytes), tensor_limit_(tensor_limit) {}
  void add(const std::string& name, const TensorSpec& spec);  // an operation every rank agreed on
  void add_unfusable(Response response);                     // anything else (errors)

 private:
  struct OpenGroup {
    size_t response = 0;  // index into *out_
    int32_t dtype = 0;
    int32_t op = 0;
    size_t bytes = 0;
  };
  std::vector<Response>* out_;
  size_t fusion_bytes_;
  size_t tensor_limit_;
  std::vector<OpenGroup> open_;  // at most one per (dtype, op)
};

class Coordinator {
 public:
  using Clock = std::chrono::steady_clock;
  Coordinator(int world_size, size_t fusion_bytes, size_t fusion_tensor_limit);

  void add(int rank, const Announcement& announcement, Clock::time_point now);
  // Drops a name that ran without the coordinator (all ranks had it cached).
  void forget(const std::string& name);
  // Some name waits for some rank.
  bool has_pending() const { return !pending_.empty(); }
  // The responses of this cycle; clears what they cover.
  std::vector<Response> take_responses();

  // A name that some ranks announced and others not, with who is missing.
  struct Stalled {
    std::string name;
    std::vector<int> missing;
    double seconds = 0;
  };
  // Names that have waited at least `seconds` for some rank.
  std::vector<Stalled> stalled(Clock::time_point now, double seconds) const;
  // Turns every such name into an error response (MATEX_STALL_SHUTDOWN_SECONDS).
  void fail_stalled(Clock::time_point now, double seconds);

 private:
  struct Pending {
    std::vector<TensorSpec> specs;  // per rank
    std::vector<bool> announced;    // per rank
    bool queued = false;            // in ready_
    std::vector<int32_t> refusal_status;  // per rank: MATEX_SUCCESS, or why the rank refused the name
    std::vector<std::string> refusals;    // per rank
    uint64_t order = 0;             // first announcement
    Clock::time_point first_seen;
  };
  Response check_and_describe(const std::string& name, const Pending& pending) const;
  Response refused(const std::string& name, const Pending& pending) const;
  // Every rank has announced the name or joined.
  bool complete(const Pending& pending) const;
  // The lowest rank that announced the name: its spec stands for the others.
  int reference_rank(const Pending& pending) const;
  void join(int rank);

  int world_size_;
  size_t fusion_bytes_;
  size_t fusion_tensor_limit_;
  uint64_t next_order_ = 0;
  std::map<std::string, Pending> pending_;
  std::vector<std::string> ready_;  // in the order they became ready
  std::vector<Response> failed_;    // stalled names turned into errors
  int shutdown_votes_ = 0;
  std::vector<bool> voted_;
  std::vector<bool> joined_;  // per rank, until every rank has joined
  int joined_count_ = 0;
  int last_joined_ = -1;
};

}  // namespace matexcomm
