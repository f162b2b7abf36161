#include "comm/call_agreement.h"

#include <cstring>
#include <iterator>
#include <map>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"
#include "core/logging.h"
#include "core/mpi_handles.h"
#include "core/reduce_kernels.h"

namespace matexcomm {

namespace {

const char* kind_name(CallKind kind) {
  switch (kind) {
    case CallKind::kAllreduce: return "allreduce";
    case CallKind::kBroadcast: return "broadcast";
    case CallKind::kAllgather: return "allgather";
    case CallKind::kReduceScatter: return "reduce_scatter";
    case CallKind::kReduce: return "reduce";
    case CallKind::kGather: return "gather";
    case CallKind::kScatter: return "scatter";
    case CallKind::kAlltoall: return "alltoall";
    case CallKind::kBarrier: return "barrier";
  }
  return "an unknown collective";
}

void pack(const CallSignature& s, int64_t* fields) {
  fields[0] = static_cast<int64_t>(s.kind);
  fields[1] = s.count;
  fields[2] = s.dtype;
  fields[3] = s.op;
  fields[4] = s.root;
}

CallSignature unpack(const int64_t* fields) {
  return {static_cast<CallKind>(fields[0]), fields[1], fields[2], fields[3], fields[4]};
}

// Waits until `done()`, without a timeout (the check must not add one where
// the collective itself has none, or wait inside MPI for another node);
// after `warn_seconds` it warns once, naming the call.
template <class Done>
void wait_until(Done done, const CallCheckComms& comms, uint64_t sequence, const CallSignature& mine, int peer) {
  wait_without_timeout(done, comms.pace, comms.warn_seconds, [&](double elapsed) {
    MATEX_LOG(LogLevel::kWarn, "still waiting after " + std::to_string(elapsed) + " s for rank " +
                                   std::to_string(peer) + " to reach collective call #" + std::to_string(sequence) +
                                   " (" + describe_call(mine) + "); is every rank calling the same collectives?");
  });
}

// What every message of the check says. A message without data sends it
// whole; one with data sends its signature in the tag (carried_tag) instead.
// Either way the receiver holds a Header followed by the data.
struct Header {
  int64_t fields[kSignatureFields];
  int64_t disagreement;  // 1: some rank's header differed
};
constexpr size_t kLargestMessage = sizeof(Header) + kCarriedMaxBytes;

// A carried message's tag: kCarriedTagBase plus 4 bits each of op, dtype and
// kind, and the disagreement flag above them. The count is not in it: the
// receiver takes it from the message's length.
constexpr int kCodeBits = 4;
static_assert(MATEX_OP_COUNT <= (1 << kCodeBits) && MATEX_DTYPE_COUNT <= (1 << kCodeBits) &&
                  static_cast<int>(CallKind::kBarrier) < (1 << kCodeBits),
              "a signature field outgrew its bits of the carried tag");
static_assert((1 << (3 * kCodeBits + 1)) <= kCarriedTagCount, "the carried tags outgrew their range");

int carried_tag(const Header& header) {
  int code = 0;
  for (int field : {0, 2, 3}) {  // kind, dtype, op (a carried call always has them; never a root)
    MATEX_REQUIRE(header.fields[field] >= 0 && header.fields[field] < (1 << kCodeBits), MATEX_ERR_INTERNAL,
                  "a carried call check cannot encode signature field " + std::to_string(field) + " = " +
                      std::to_string(header.fields[field]));
    code = (code << kCodeBits) | static_cast<int>(header.fields[field]);
  }
  return kCarriedTagBase + (static_cast<int>(header.disagreement != 0) << (3 * kCodeBits)) + code;
}

// The header that a carried message of `bytes` data bytes under `tag` stands for.
Header carried_header(int tag, size_t bytes) {
  const int code = tag - kCarriedTagBase;
  const int mask = (1 << kCodeBits) - 1;
  Header header{};
  header.fields[0] = (code >> (2 * kCodeBits)) & mask;
  header.fields[2] = (code >> kCodeBits) & mask;
  header.fields[3] = code & mask;
  header.fields[4] = -1;
  header.disagreement = (code >> (3 * kCodeBits)) & 1;
  const int64_t dtype = header.fields[2];
  const size_t element = dtype < MATEX_DTYPE_COUNT ? dtype_size(static_cast<matex_dtype_t>(dtype)) : 0;
  // -2: no count of any call, so a length that is no whole number of elements never agrees.
  header.fields[1] = element != 0 && bytes % element == 0 ? static_cast<int64_t>(bytes / element) : -2;
  return header;
}

enum ThreadBuffer { kSendBuffer, kReceiveBuffer };

// Room for the largest message, one of each kind per thread.
char* thread_buffer(ThreadBuffer which) {
  thread_local std::vector<char> buffers[2] = {std::vector<char>(kLargestMessage), std::vector<char>(kLargestMessage)};
  return buffers[which].data();
}

// One rank's side of the exchange: its message (header, then the carried
// data) and what it has learnt so far.
class Exchange {
 public:
  struct Received {
    char* data;  // this thread's receive buffer: writable
    size_t size;
    int from;    // the rank that sent it
  };

  Exchange(const CallCheckComms& comms, uint64_t sequence, const CallSignature& mine, const CarriedData* carried)
      : comms_(comms), sequence_(sequence), mine_(mine), carried_(carried), rank_(comms.layout->world_rank) {
    const size_t payload = carried ? carried->count * dtype_size(carried->dtype) : 0;
    MATEX_REQUIRE(payload <= kCarriedMaxBytes, MATEX_ERR_INTERNAL,
                  "the call check carries at most " + std::to_string(kCarriedMaxBytes) + " B, not " +
                      std::to_string(payload));
    size_ = sizeof(Header) + payload;
    Header header{};
    pack(mine, header.fields);
    std::memcpy(message_, &header, sizeof header);
    if (payload > 0) std::memcpy(message_ + sizeof(Header), carried->input, payload);
  }

  // Sends this rank's message to `peer` (when `send`), receives the peer's
  // (when `receive`) and returns it as a header and its data. The receive is
  // posted first, for any tag, into room for the largest message any rank
  // sends (a header, or kCarriedMaxBytes of data), so a peer that disagrees
  // on what it carries is still received whole.
  Received swap(int peer, bool send, bool receive) {
    // Requests still active when an MPI call fails (the communicator is then
    // failed) are cancelled and freed: nothing lands in the buffers later.
    struct Requests {
      MPI_Request handles[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
      ~Requests() {
        for (MPI_Request& request : handles) {
          if (request == MPI_REQUEST_NULL) continue;
          MPI_Cancel(&request);
          MPI_Request_free(&request);
        }
      }
    } pending;
    MPI_Request* requests = pending.handles;
    char* incoming = thread_buffer(kReceiveBuffer);
    if (receive) {
      check_mpi(MPI_Irecv(incoming + sizeof(Header), static_cast<int>(kCarriedMaxBytes), MPI_BYTE, peer,
                          MPI_ANY_TAG, comms_.all, &requests[0]),
                "MPI_Irecv of the call check");
    }
    if (send) {
      // With data: the data alone, the header in the tag. Without: the header.
      const bool carries = carried_ != nullptr;
      check_mpi(MPI_Isend(carries ? message_ + sizeof(Header) : message_,
                          static_cast<int>(carries ? size_ - sizeof(Header) : size_), MPI_BYTE, peer,
                          carries ? carried_tag(header()) : kCallCheckTag, comms_.all, &requests[1]),
                "MPI_Isend of the call check");
    }
    MPI_Status statuses[2];
    wait_until([&] {
      int done = 0;
      check_mpi(MPI_Testall(2, requests, &done, statuses), "MPI_Testall of the call check");
      return done != 0;
    }, comms_, sequence_, mine_, peer);
    if (!receive) return {incoming, 0, peer};
    int bytes = 0;
    check_mpi(MPI_Get_count(&statuses[0], MPI_BYTE, &bytes), "MPI_Get_count of the call check");
    const int tag = statuses[0].MPI_TAG;
    if (tag == kCallCheckTag) {
      std::memmove(incoming, incoming + sizeof(Header), static_cast<size_t>(bytes));
      return {incoming, static_cast<size_t>(bytes), peer};
    }
    MATEX_REQUIRE(tag >= kCarriedTagBase && tag < kCarriedTagBase + kCarriedTagCount, MATEX_ERR_INTERNAL,
                  "the call check received a message with tag " + std::to_string(tag) + " from rank " +
                      std::to_string(peer) + ": something else sends point to point on the communicator");
    const Header theirs = carried_header(tag, static_cast<size_t>(bytes));
    std::memcpy(incoming, &theirs, sizeof theirs);
    return {incoming, sizeof(Header) + static_cast<size_t>(bytes), peer};
  }

  // Folds a peer's message into this rank's: flags any difference, else
  // reduces the carried data. Both partners apply the op with the lower
  // rank's value first, so they get the same bits even where an op is not
  // symmetric in them (min and max of a NaN, or of -0 and +0).
  void combine(const Received& theirs) {
    Header mine = header();
    Header other{};
    const bool whole = theirs.size >= sizeof(Header);
    if (whole) std::memcpy(&other, theirs.data, sizeof other);
    const bool same = whole && theirs.size == size_ && other.disagreement == 0 &&
                      std::equal(std::begin(mine.fields), std::end(mine.fields), std::begin(other.fields));
    if (mine.disagreement != 0) return;
    if (!same) {
      mine.disagreement = 1;
      std::memcpy(message_, &mine, sizeof mine);
      return;
    }
    if (carried_ != nullptr && carried_->count > 0) {
      const matex_op_t op = carried_->op == MATEX_AVG ? MATEX_SUM : carried_->op;
      char* own = message_ + sizeof(Header);
      char* other_data = theirs.data + sizeof(Header);
      if (rank_ < theirs.from) {
        reduce_into(carried_->dtype, op, own, other_data, carried_->count);
      } else {
        reduce_into(carried_->dtype, op, other_data, own, carried_->count);
        std::memcpy(own, other_data, size_ - sizeof(Header));
      }
    }
  }

  // Takes a peer's final message as this rank's own (a folded rank's last step).
  void adopt(const Received& theirs) {
    if (theirs.size == size_) {
      std::memcpy(message_, theirs.data, theirs.size);
    } else {
      Header mine = header();
      mine.disagreement = 1;
      std::memcpy(message_, &mine, sizeof mine);
    }
  }

  bool agreed() const { return header().disagreement == 0; }

  void deliver() const {
    if (carried_ != nullptr && carried_->count > 0) {
      std::memcpy(carried_->output, message_ + sizeof(Header), size_ - sizeof(Header));
    }
  }

 private:
  Header header() const {
    Header h{};
    std::memcpy(&h, message_, sizeof h);
    return h;
  }

  const CallCheckComms& comms_;
  uint64_t sequence_;
  const CallSignature& mine_;
  const CarriedData* carried_;
  int rank_;
  // This rank's message, in room for the largest one, allocated once per
  // thread (the check runs before every collective: no allocation per call).
  char* message_ = thread_buffer(kSendBuffer);
  size_t size_ = 0;
};

std::string rank_list(const std::vector<int>& ranks, const topo::Layout& layout) {
  std::string text;
  for (size_t i = 0; i < ranks.size(); ++i) {
    const int r = ranks[i];
    text += (i ? ", " : "") + std::string("rank ") + std::to_string(r) + " (local rank " +
            std::to_string(layout.local_rank_of_rank[r]) + " of node " + std::to_string(layout.node_of_rank[r]) +
            ")";
  }
  return text;
}

}  // namespace

std::string describe_call(const CallSignature& s) {
  std::string text = kind_name(s.kind);
  if (s.count >= 0) text += " count=" + std::to_string(s.count);
  if (s.dtype >= 0) text += std::string(" dtype=") + dtype_name(static_cast<matex_dtype_t>(s.dtype));
  if (s.op >= 0) text += std::string(" op=") + op_name(static_cast<matex_op_t>(s.op));
  if (s.root >= 0) text += " root=" + std::to_string(s.root);
  return text;
}

void agree_call(const CallCheckComms& comms, uint64_t sequence, const CallSignature& mine,
                const CarriedData* carried) {
  const topo::Layout& layout = *comms.layout;
  const int size = layout.world_size;
  const int rank = layout.world_rank;
  Exchange exchange(comms, sequence, mine, carried);
  int below = 1;  // the largest power of two not above size
  while (below * 2 <= size) below *= 2;
  const int extra = size - below;
  if (rank >= below) {
    exchange.swap(rank - below, true, false);
    exchange.adopt(exchange.swap(rank - below, false, true));
  } else {
    if (rank < extra) exchange.combine(exchange.swap(rank + below, false, true));
    for (int distance = 1; distance < below; distance *= 2) {
      exchange.combine(exchange.swap(rank ^ distance, true, true));
    }
    if (rank < extra) exchange.swap(rank + below, true, false);
  }
  if (exchange.agreed()) {
    exchange.deliver();
    return;
  }

  // Every rank has learnt of the disagreement, so every rank is here.
  int64_t both[kSignatureFields];
  pack(mine, both);
  std::vector<int64_t> all(static_cast<size_t>(size) * kSignatureFields);
  check_mpi(MPI_Allgather(both, kSignatureFields, MPI_INT64_T, all.data(), kSignatureFields, MPI_INT64_T, comms.all),
            "MPI_Allgather of call signatures");
  // Distinct calls in the order of the first rank making each: the same text on every rank.
  std::vector<std::string> calls;
  std::map<std::string, std::vector<int>> callers;
  for (int r = 0; r < size; ++r) {
    const std::string call = describe_call(unpack(&all[static_cast<size_t>(r) * kSignatureFields]));
    if (callers.find(call) == callers.end()) calls.push_back(call);
    callers[call].push_back(r);
  }
  std::string message = "ranks disagree on collective call #" + std::to_string(sequence) + " of this communicator:";
  for (size_t i = 0; i < calls.size(); ++i) {
    message += (i ? "; " : " ") + rank_list(callers[calls[i]], layout) + (callers[calls[i]].size() == 1 ? " calls " : " call ") +
               calls[i];
  }
  message += " (this is rank " + std::to_string(rank) +
             "; a rank that skipped a call, or called collectives in another order, pairs its next call with the "
             "others' skipped one)";
  MATEX_RAISE(MATEX_ERR_MISMATCH, message);
}

}  // namespace matexcomm
