// algorithm_catalog.cc - see algorithm_catalog.h. docs/algorithms.md tells
// each algorithm's story; the cost notes here are the headers' in a line.
#include "core/algorithm_catalog.h"

#include <map>
#include <stdexcept>
#include <string>

namespace matexcomm {

namespace {

const std::vector<AlgorithmInfo> kAllreduce = {
    {kAllreduceFlat, "flat", "MPI's own allreduce (for a ring: 2(p-1) alpha + 2(p-1)/p n beta)",
     "none; the fallback of every other one", false, false},
    {kAllreduceRsArAg, "rs_ar_ag",
     "two shared-memory copies + 2(N-1) alpha + 2(N-1)/N (n/q) beta on q rails at once",
     "the node's shared memory", true, false},
    {kAllreduceRsArAgCma, "rs_ar_ag_cma",
     "(q/m) n / B_mem in single copies (CMA) + the rails' 2(N-1) alpha + 2(N-1)/N (n/q) beta",
     "the node's shared memory and cross-memory attach on every node (else rs_ar_ag)", true, true},
    {kAllreduceRab, "rab", "(q+2) n / B_mem + 2 lg N alpha through the node leaders: one MPI stream",
     "the node's shared memory", true, false},
    {kAllreduceOneshot, "oneshot", "one flag wait + q n / B_L1: every rank reads every neighbour's input",
     "the node's shared memory, one node (on several, rab)", true, false},
};
const std::vector<AlgorithmInfo> kBroadcast = {
    {kBroadcastFlat, "flat", "MPI's own broadcast (binomial: lg p alpha + lg p n beta)", "none", false, false},
    {kBroadcastHier, "hier", "across the node leaders, then inside each node: (lg N + lg q) alpha",
     "none; it helps on several nodes of which some hold several ranks", false, false},
};
const std::vector<AlgorithmInfo> kFlatOnly = {
    {0, "flat", "MPI's own ring: (p-1) alpha + (p-1)/p n beta", "every count fits an int", false, false},
};
const std::vector<AlgorithmInfo> kNone = {};

}  // namespace

const std::vector<AlgorithmInfo>& algorithm_catalog(matex_collective_t coll) {
  switch (coll) {
    case MATEX_COLL_ALLREDUCE: return kAllreduce;
    case MATEX_COLL_BROADCAST: return kBroadcast;
    case MATEX_COLL_ALLGATHER:
    case MATEX_COLL_REDUCE_SCATTER: return kFlatOnly;
    case MATEX_COLL_REDUCE: return kNone;
  }
  throw std::out_of_range("algorithm_catalog: not a matex_collective_t");
}

const AlgorithmInfo& algorithm_info(matex_collective_t coll, int id) {
  for (const AlgorithmInfo& info : algorithm_catalog(coll)) {
    if (info.id == id) return info;
  }
  throw std::out_of_range("algorithm_info: collective " + std::to_string(static_cast<int>(coll)) +
                          " has no algorithm with id " + std::to_string(id));
}

int find_algorithm(matex_collective_t coll, const std::string& name) {
  for (const AlgorithmInfo& info : algorithm_catalog(coll)) {
    if (name == info.name) return info.id;
  }
  return -1;
}

std::vector<std::string> algorithm_names(matex_collective_t coll) {
  const std::vector<AlgorithmInfo>& catalog = algorithm_catalog(coll);
  if (catalog.empty()) return {};
  std::vector<std::string> names = {"auto"};
  for (const AlgorithmInfo& info : catalog) names.push_back(info.name);
  return names;
}

const char* algorithm_choices(matex_collective_t coll) {
  static const auto* kChoices = [] {
    auto* choices = new std::map<int, std::string>;  // never freed: the config table keeps pointers into it
    for (int c = MATEX_COLL_ALLREDUCE; c <= MATEX_COLL_REDUCE; ++c) {
      std::string& list = (*choices)[c];
      for (const std::string& name : algorithm_names(static_cast<matex_collective_t>(c))) {
        list += (list.empty() ? "" : "|") + name;
      }
    }
    return choices;
  }();
  return kChoices->at(static_cast<int>(coll)).c_str();
}

}  // namespace matexcomm
