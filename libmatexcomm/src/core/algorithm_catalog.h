// algorithm_catalog.h - the algorithms a caller can choose, per collective,
// each named once: the config table's choices (MATEX_ALLREDUCE_ALGO),
// matex_set_algorithm's check, the function tables of algorithms/ and the
// selection in select/ all read them here, by id.
//
// An id names an algorithm for good; the lists are in the order people see
// them (the config table's choices, matex-bench's race columns). Allreduce
// ids travel in the shared-memory call descriptor, so that ranks that chose
// differently fail instead of mixing algorithms.
#pragma once

#include <string>
#include <vector>

#include "matexcomm/matexcomm.h"

namespace matexcomm {

enum AllreduceId : int {
  kAllreduceFlat = 0,
  kAllreduceRsArAg = 1,
  kAllreduceRab = 2,
  kAllreduceRsArAgCma = 3,
  kAllreduceOneshot = 4,
};
enum BroadcastId : int { kBroadcastFlat = 0, kBroadcastHier = 1 };

struct AlgorithmInfo {
  int id;
  const char* name;
  const char* cost;           // in a line, with p ranks, N nodes, q ranks per node, n bytes
  const char* preconditions;  // and what runs instead where they do not hold
  bool hierarchical;          // needs the node's shared memory (else flat runs)
  bool single_copy;           // needs cross-memory attach on every node (else rs_ar_ag runs)
};

// The algorithms of `coll`, in the order shown; MATEX_COLL_REDUCE has none to choose
// (the layout decides). An id outside the list, or a collective outside
// matex_collective_t, is a programming error (std::out_of_range).
const std::vector<AlgorithmInfo>& algorithm_catalog(matex_collective_t coll);
const AlgorithmInfo& algorithm_info(matex_collective_t coll, int id);
// The id of `name` in `coll`'s list, or -1.
int find_algorithm(matex_collective_t coll, const std::string& name);
// "auto" and then every name, as matex_set_algorithm accepts them.
std::vector<std::string> algorithm_names(matex_collective_t coll);
// The same, "|"-separated, for the config table: lives as long as the process.
const char* algorithm_choices(matex_collective_t coll);

}  // namespace matexcomm
