// backend_split.cc - split_group(): a new group made from some ranks of this
// one. Cost: one matex_comm_create_from_ranks among the new group's members
// (the others return at once). c10d calls split() on every rank of this
// group: a member with its split's ranks (ranks of this group, in the order
// that gives the new group ranks), a rank in no split with the first split.
// The new communicator is made from the world's, so a broken or closed
// group can still be split.
#include <c10/util/Exception.h>

#include <algorithm>

#include "backend.h"
#include "world.h"

namespace matex_torch {

c10::intrusive_ptr<c10d::Backend::Options> MatexBackend::getBackendOptions() {
  auto options = c10::make_intrusive<Options>("matex", timeout_);
  options->group_name = *group_name_;
  options->global_ranks_in_group.assign(members_.begin(), members_.end());
  return options;
}

c10::intrusive_ptr<c10d::Backend> MatexBackend::split(const c10::intrusive_ptr<c10d::Store>& /*store*/,
                                                      const std::vector<int>& ranks,
                                                      const c10::intrusive_ptr<Options>& opts) {
  std::vector<int64_t> world_ranks;
  std::vector<bool> seen(static_cast<size_t>(size_), false);
  int new_rank = -1;
  for (size_t i = 0; i < ranks.size(); ++i) {
    const int r = ranks[i];
    TORCH_CHECK(r >= 0 && r < size_, "matex: split_group of group ", *group_name_, " names rank ", r,
                ", which is not a rank of that group (it has ", size_, ")");
    TORCH_CHECK(!seen[r], "matex: split_group of group ", *group_name_, " names rank ", r, " twice");
    seen[r] = true;
    if (r == rank_) new_rank = static_cast<int>(i);
    world_ranks.push_back(members_[r]);
  }
  if (new_rank < 0) return nullptr;  // not a member: nothing to create here
  const std::chrono::milliseconds timeout = opts ? effective(opts->timeout) : timeout_;
  const std::string name = opts && !opts->group_name.empty() ? opts->group_name : *group_name_ + ":split";
  return create_backend(new_rank, static_cast<int>(ranks.size()), world_ranks, timeout.count() / 1000.0, name);
}

}  // namespace matex_torch
