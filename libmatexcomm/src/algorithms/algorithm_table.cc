// algorithm_table.cc - the function behind each algorithm id of
// core/algorithm_catalog.h, in the catalog's order.
#include <stdexcept>
#include <string>

#include "algorithms/algorithms.h"

namespace matexcomm {

namespace {

constexpr AllreduceFunction kAllreduce[] = {allreduce_flat, allreduce_rs_ar_ag, allreduce_rab, allreduce_rs_ar_ag_cma,
                                            allreduce_oneshot};
constexpr BroadcastFunction kBroadcast[] = {broadcast_flat, broadcast_hierarchical};
static_assert(kAllreduceFlat == 0 && kAllreduceRsArAg == 1 && kAllreduceRab == 2 && kAllreduceRsArAgCma == 3 &&
                  kAllreduceOneshot == 4 && sizeof kAllreduce / sizeof kAllreduce[0] == 5,
              "kAllreduce follows AllreduceId");
static_assert(kBroadcastFlat == 0 && kBroadcastHier == 1 && sizeof kBroadcast / sizeof kBroadcast[0] == 2,
              "kBroadcast follows BroadcastId");

}  // namespace

AllreduceFunction allreduce_function(int id) {
  if (id < 0 || id >= static_cast<int>(sizeof kAllreduce / sizeof kAllreduce[0])) {
    throw std::out_of_range("allreduce_function: no algorithm has id " + std::to_string(id));
  }
  return kAllreduce[id];
}

BroadcastFunction broadcast_function(int id) {
  if (id < 0 || id >= static_cast<int>(sizeof kBroadcast / sizeof kBroadcast[0])) {
    throw std::out_of_range("broadcast_function: no algorithm has id " + std::to_string(id));
  }
  return kBroadcast[id];
}

}  // namespace matexcomm
