#include "engine/negotiation.h"

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "core/dtype.h"
#include "core/error.h"

namespace matexcomm {

namespace {

class Writer {
 public:
  template <class T>
  void put(T value) {
    static_assert(std::is_trivially_copyable_v<T>, "plain values only");
    const char* bytes = reinterpret_cast<const char*>(&value);
    out_.append(bytes, sizeof value);
  }
  void put_string(const std::string& text) {
    put<uint32_t>(static_cast<uint32_t>(text.size()));
    out_ += text;
  }
  void put_spec(const TensorSpec& spec) {
    put(spec.kind);
    put(spec.dtype);
    put(spec.op);
    put(spec.root);
    put(spec.count);
    put(spec.row_elements);
    put<uint32_t>(static_cast<uint32_t>(spec.shape.size()));
    for (int64_t extent : spec.shape) put(extent);
    put<uint8_t>(spec.device ? 1 : 0);
  }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

class Reader {
 public:
  explicit Reader(const std::string& in) : in_(in) {}
  template <class T>
  T get() {
    T value;
    need(sizeof value);
    std::memcpy(&value, in_.data() + at_, sizeof value);
    at_ += sizeof value;
    return value;
  }
  std::string get_string() {
    const uint32_t size = get<uint32_t>();
    need(size);
    std::string text = in_.substr(at_, size);
    at_ += size;
    return text;
  }
  TensorSpec get_spec() {
    TensorSpec spec;
    spec.kind = get<TensorKind>();
    spec.dtype = get<int32_t>();
    spec.op = get<int32_t>();
    spec.root = get<int32_t>();
    spec.count = get<uint64_t>();
    spec.row_elements = get<uint64_t>();
    spec.shape.resize(get<uint32_t>());
    for (int64_t& extent : spec.shape) extent = get<int64_t>();
    spec.device = get<uint8_t>() != 0;
    return spec;
  }
  bool done() const { return at_ == in_.size(); }

 private:
  void need(size_t bytes) const {
    if (in_.size() - at_ < bytes) MATEX_RAISE(MATEX_ERR_INTERNAL, "engine message truncated");
  }
  const std::string& in_;
  size_t at_ = 0;
};

const char* kind_name(TensorKind kind) {
  switch (kind) {
    case TensorKind::kAllreduce: return "allreduce";
    case TensorKind::kBroadcast: return "broadcast";
    case TensorKind::kAllgather: return "allgather";
    case TensorKind::kJoin: return "join";
  }
  return "unknown";
}

}  // namespace

bool TensorSpec::shapes_agree(const TensorSpec& o) const {
  if (shape.empty() || o.shape.empty()) return true;  // not given by one of them: counts decide
  if (kind != TensorKind::kAllgather) return shape == o.shape;
  return shape.size() == o.shape.size() && std::equal(shape.begin() + 1, shape.end(), o.shape.begin() + 1);
}

bool TensorSpec::agrees_with(const TensorSpec& o) const {
  if (kind != o.kind || dtype != o.dtype || !shapes_agree(o)) return false;
  switch (kind) {
    case TensorKind::kAllreduce: return op == o.op && count == o.count;
    case TensorKind::kBroadcast: return root == o.root && count == o.count;
    case TensorKind::kAllgather: return row_elements == o.row_elements;  // row counts may differ
    case TensorKind::kJoin: return true;
  }
  return false;
}

bool TensorSpec::agrees_exactly(const TensorSpec& o) const {
  return kind == o.kind && dtype == o.dtype && op == o.op && root == o.root && count == o.count &&
         row_elements == o.row_elements && shape == o.shape && device == o.device;
}

size_t TensorSpec::bytes() const {
  return static_cast<size_t>(count * row_elements) * dtype_size(static_cast<matex_dtype_t>(dtype));
}

std::string TensorSpec::describe() const {
  if (kind == TensorKind::kJoin) return "join";
  std::string text = std::string(kind_name(kind)) + " " + dtype_name(static_cast<matex_dtype_t>(dtype));
  switch (kind) {
    case TensorKind::kAllreduce: text += std::string(" ") + op_name(static_cast<matex_op_t>(op)); break;
    case TensorKind::kBroadcast: text += " root=" + std::to_string(root); break;
    case TensorKind::kAllgather: text += " row_elements=" + std::to_string(row_elements); break;
    case TensorKind::kJoin: break;
  }
  text += (kind == TensorKind::kAllgather ? " rows=" : " count=") + std::to_string(count);
  if (!shape.empty()) {
    text += " shape=[";
    for (size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
    text += "]";
  }
  return text;
}

std::string Announcement::encode() const {
  Writer w;
  w.put<uint8_t>(wants_shutdown ? 1 : 0);
  w.put<uint32_t>(static_cast<uint32_t>(entries.size()));
  for (const Entry& entry : entries) {
    w.put_string(entry.name);
    w.put_spec(entry.spec);
    w.put(entry.refusal_status);
    w.put_string(entry.refusal);
  }
  return w.take();
}

Announcement Announcement::decode(const std::string& bytes) {
  Reader r(bytes);
  Announcement a;
  a.wants_shutdown = r.get<uint8_t>() != 0;
  const uint32_t n = r.get<uint32_t>();
  a.entries.reserve(n);
  for (uint32_t i = 0; i < n; ++i) {
    Entry entry;
    entry.name = r.get_string();
    entry.spec = r.get_spec();
    entry.refusal_status = r.get<int32_t>();
    entry.refusal = r.get_string();
    a.entries.push_back(std::move(entry));
  }
  if (!r.done()) MATEX_RAISE(MATEX_ERR_INTERNAL, "engine announcement has trailing bytes");
  return a;
}

std::string encode_responses(const std::vector<Response>& responses) {
  Writer w;
  w.put<uint32_t>(static_cast<uint32_t>(responses.size()));
  for (const Response& response : responses) {
    w.put(response.type);
    w.put(response.kind);
    w.put<uint32_t>(static_cast<uint32_t>(response.names.size()));
    for (const std::string& name : response.names) w.put_string(name);
    w.put<uint32_t>(static_cast<uint32_t>(response.specs.size()));
    for (const TensorSpec& spec : response.specs) w.put_spec(spec);
    w.put<uint32_t>(static_cast<uint32_t>(response.rows.size()));
    for (uint64_t rows : response.rows) w.put(rows);
    w.put_string(response.error);
    w.put(response.status);
  }
  return w.take();
}

std::vector<Response> decode_responses(const std::string& bytes) {
  Reader r(bytes);
  std::vector<Response> responses(r.get<uint32_t>());
  for (Response& response : responses) {
    response.type = r.get<Response::Type>();
    response.kind = r.get<TensorKind>();
    response.names.resize(r.get<uint32_t>());
    for (std::string& name : response.names) name = r.get_string();
    response.specs.resize(r.get<uint32_t>());
    for (TensorSpec& spec : response.specs) spec = r.get_spec();
    response.rows.resize(r.get<uint32_t>());
    for (uint64_t& rows : response.rows) rows = r.get<uint64_t>();
    response.error = r.get_string();
    response.status = r.get<int32_t>();
  }
  if (!r.done()) MATEX_RAISE(MATEX_ERR_INTERNAL, "engine response list has trailing bytes");
  return responses;
}

Coordinator::Coordinator(int world_size, size_t fusion_bytes, size_t fusion_tensor_limit)
    : world_size_(world_size),
      fusion_bytes_(fusion_bytes),
      fusion_tensor_limit_(fusion_tensor_limit),
      voted_(static_cast<size_t>(world_size), false),
      joined_(static_cast<size_t>(world_size), false) {}

bool Coordinator::complete(const Pending& p) const {
  for (int r = 0; r < world_size_; ++r) {
    if (!p.announced[r] && !joined_[r]) return false;
  }
  return true;
}

int Coordinator::reference_rank(const Pending& p) const {
  for (int r = 0; r < world_size_; ++r) {
    if (p.announced[r]) return r;
  }
  return 0;  // not reached: a pending name has been announced by some rank
}

void Coordinator::join(int rank) {
  if (joined_[rank]) return;  // the engine refuses a second join in flight before it gets here
  joined_[rank] = true;
  ++joined_count_;
  last_joined_ = rank;
  // Names that waited only for this rank are ready now, in the order they were first announced.
  std::vector<std::pair<uint64_t, std::string>> now_ready;
  for (auto& [name, p] : pending_) {
    if (p.queued || !complete(p)) continue;
    p.queued = true;
    now_ready.emplace_back(p.order, name);
  }
  std::sort(now_ready.begin(), now_ready.end());
  for (auto& entry : now_ready) ready_.push_back(std::move(entry.second));
}

void Coordinator::add(int rank, const Announcement& announcement, Clock::time_point now) {
  if (announcement.wants_shutdown && !voted_[rank]) {
    voted_[rank] = true;
    ++shutdown_votes_;
  }
  for (const Announcement::Entry& entry : announcement.entries) {
    if (entry.spec.kind == TensorKind::kJoin) {
      join(rank);
      continue;
    }
    auto [it, fresh] = pending_.try_emplace(entry.name);
    Pending& p = it->second;
    if (fresh) {
      p.specs.resize(world_size_);
      p.announced.assign(world_size_, false);
      p.refusal_status.assign(world_size_, MATEX_SUCCESS);
      p.refusals.resize(world_size_);
      p.order = next_order_++;
      p.first_seen = now;
    }
    if (p.announced[rank]) continue;  // the engine refuses duplicates before they get here
    p.announced[rank] = true;
    p.specs[rank] = entry.spec;
    p.refusal_status[rank] = entry.refusal_status;
    p.refusals[rank] = entry.refusal;
    if (!p.queued && complete(p)) {
      p.queued = true;
      ready_.push_back(entry.name);
    }
  }
}

Response Coordinator::refused(const std::string& name, const Pending& p) const {
  Response response;
  response.type = Response::Type::kError;
  response.kind = p.specs[reference_rank(p)].kind;
  response.names = {name};
  std::string reasons;
  for (size_t r = 0; r < p.refusals.size(); ++r) {
    if (p.refusal_status[r] == MATEX_SUCCESS) continue;
    if (response.status == MATEX_SUCCESS) response.status = p.refusal_status[r];  // the lowest rank's
    reasons += (reasons.empty() ? "" : "; ") + std::string("rank ") + std::to_string(r) + ": " + p.refusals[r];
  }
  response.error = "tensor '" + name + "' was refused before it could run (" + reasons + ")";
  return response;
}

Response Coordinator::check_and_describe(const std::string& name, const Pending& p) const {
  for (int32_t status : p.refusal_status) {
    if (status != MATEX_SUCCESS) return refused(name, p);
  }
  const int first = reference_rank(p);
  Response response;
  response.kind = p.specs[first].kind;
  response.names = {name};
  bool agree = true;
  std::string absent;  // joined ranks that did not submit the name
  for (int r = 0; r < world_size_; ++r) {
    if (p.announced[r]) agree = agree && p.specs[r].agrees_with(p.specs[first]);
    else absent += (absent.empty() ? "" : ", ") + std::to_string(r);
  }
  if (!agree) {
    response.type = Response::Type::kError;
    response.status = MATEX_ERR_MISMATCH;
    std::string error = "tensor '" + name + "' was submitted differently by the ranks:";
    for (int r = 0; r < world_size_; ++r) {
      error += " rank " + std::to_string(r) + ": " + (p.announced[r] ? p.specs[r].describe() : "joined") + ";";
    }
    error.back() = '.';
    response.error = error;
    return response;
  }
  if (!absent.empty() && p.specs[first].device) {
    response.type = Response::Type::kError;
    response.status = MATEX_ERR_UNSUPPORTED;
    response.error = "tensor '" + name + "' is in GPU memory, and rank(s) " + absent +
                     " have joined: a joined rank stands in for host tensors only";
    return response;
  }
  if (!absent.empty() && response.kind != TensorKind::kAllreduce) {
    response.type = Response::Type::kError;
    response.status = MATEX_ERR_INVALID_ARG;
    response.error = "tensor '" + name + "' (" + p.specs[first].describe() + ") cannot run while rank(s) " + absent +
                     " have joined: a joined rank takes part in allreduces only, with zeros";
    return response;
  }
  if (response.kind == TensorKind::kAllgather) {
    for (int r = 0; r < world_size_; ++r) response.rows.push_back(p.specs[r].count);
  }
  return response;
}

void Fuser::add(const std::string& name, const TensorSpec& spec) {
  const bool fusable =
      spec.kind == TensorKind::kAllreduce && spec.bytes() <= fusion_bytes_ && spec.bytes() <= tensor_limit_;
  auto group = std::find_if(open_.begin(), open_.end(),
                            [&](const OpenGroup& g) { return g.dtype == spec.dtype && g.op == spec.op; });
  if (fusable && group != open_.end() && group->bytes + spec.bytes() <= fusion_bytes_) {
    (*out_)[group->response].names.push_back(name);
    (*out_)[group->response].specs.push_back(spec);
    group->bytes += spec.bytes();
    return;
  }
  Response response;
  response.kind = spec.kind;
  response.names = {name};
  response.specs = {spec};
  out_->push_back(std::move(response));
  if (!fusable) return;
  const OpenGroup opened{out_->size() - 1, spec.dtype, spec.op, spec.bytes()};
  if (group != open_.end()) *group = opened;  // the full one closes
  else open_.push_back(opened);
}

void Fuser::add_unfusable(Response response) { out_->push_back(std::move(response)); }

void Coordinator::forget(const std::string& name) { pending_.erase(name); }

std::vector<Response> Coordinator::take_responses() {
  std::vector<Response> out = std::move(failed_);
  failed_.clear();
  Fuser fuser(&out, fusion_bytes_, fusion_tensor_limit_);
  for (const std::string& name : ready_) {
    auto it = pending_.find(name);
    if (it == pending_.end()) continue;  // ran through the cache meanwhile
    Response response = check_and_describe(name, it->second);
    if (response.type == Response::Type::kExecute && response.kind != TensorKind::kAllgather) {
      fuser.add(name, it->second.specs[reference_rank(it->second)]);
    } else if (response.type == Response::Type::kExecute) {
      response.specs = {it->second.specs[reference_rank(it->second)]};
      fuser.add_unfusable(std::move(response));
    } else {
      fuser.add_unfusable(std::move(response));
    }
    pending_.erase(it);
  }
  ready_.clear();
  if (joined_count_ == world_size_) {  // every name is complete now, so none is left behind
    Response joined;
    joined.type = Response::Type::kJoin;
    joined.kind = TensorKind::kJoin;
    joined.names = {kJoinName};
    joined.rows = {static_cast<uint64_t>(last_joined_)};
    out.push_back(std::move(joined));
    joined_.assign(joined_.size(), false);
    joined_count_ = 0;
    last_joined_ = -1;
  }
  if (shutdown_votes_ > 0) {
    // One rank's vote ends the engine everywhere: every tensor needs every rank, so nothing a rank that
    // shut down has not announced can run any more, and the others must not wait for it.
    Response shutdown;
    shutdown.type = Response::Type::kShutdown;
    if (shutdown_votes_ < world_size_) {
      std::string ranks;
      for (int r = 0; r < world_size_; ++r) {
        if (voted_[r]) ranks += (ranks.empty() ? "" : ", ") + std::to_string(r);
      }
      const bool one = shutdown_votes_ == 1;
      shutdown.error = "the engine stopped on every rank: " + std::string(one ? "rank " : "ranks ") + ranks +
                       " shut it down (" + (one ? "its program ended, or it" : "their programs ended, or they") +
                       " called shutdown) while others still used it";
    }
    out.push_back(shutdown);
  }
  return out;
}

std::vector<Coordinator::Stalled> Coordinator::stalled(Clock::time_point now, double seconds) const {
  std::vector<Stalled> out;
  for (const auto& [name, p] : pending_) {
    const double waited = std::chrono::duration<double>(now - p.first_seen).count();
    if (complete(p) || waited < seconds) continue;
    Stalled s{name, {}, waited};
    for (int r = 0; r < world_size_; ++r) {
      if (!p.announced[r] && !joined_[r]) s.missing.push_back(r);
    }
    out.push_back(std::move(s));
  }
  return out;
}

void Coordinator::fail_stalled(Clock::time_point now, double seconds) {
  for (const Stalled& s : stalled(now, seconds)) {
    Response response;
    response.type = Response::Type::kError;
    response.status = MATEX_ERR_TIMEOUT;
    const Pending& p = pending_[s.name];
    for (int r = 0; r < world_size_; ++r) {
      if (p.announced[r]) response.kind = p.specs[r].kind;
    }
    response.names = {s.name};
    std::string ranks;
    for (int r : s.missing) ranks += (ranks.empty() ? "" : ", ") + std::to_string(r);
    response.error = "tensor '" + s.name + "' stalled: rank(s) " + ranks + " did not submit it within " +
                     std::to_string(static_cast<int>(s.seconds)) + " s (MATEX_STALL_SHUTDOWN_SECONDS)";
    failed_.push_back(std::move(response));
    pending_.erase(s.name);
  }
}

}  // namespace matexcomm
