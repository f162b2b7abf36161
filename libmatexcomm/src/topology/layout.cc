// layout.cc - discover which rank lives on which node.
//
// Every rank contributes one fixed-size record (its host id and a fingerprint
// of its MATEX_VIRTUAL_NODES value) to a single MPI_Allgather. Ids that do not
// fit the record are exchanged again in full with MPI_Allgatherv, so nodes are
// always told apart by comparing complete strings, never hashes. All checks run
// after the exchange on identical data, so every rank reaches the same verdict
// and an error is raised everywhere instead of leaving some ranks hanging.
#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <type_traits>
#include <vector>

#include "core/error.h"
#include "topology/layout.h"

namespace matexcomm::topo {

namespace {

// 128-byte records: "<hostname>/<boot id>" (at most 64 + 1 + 36 bytes) fits inline.
constexpr size_t kInlineIdBytes = 104;

struct RankRecord {
  uint64_t id_length;
  uint64_t spec_fingerprint;
  uint64_t world_rank;  // in MPI_COMM_WORLD, which virtual nodes describe
  char id[kInlineIdBytes];
};
static_assert(std::is_trivially_copyable_v<RankRecord>, "sent as raw bytes");
static_assert(sizeof(RankRecord) == 128, "no padding expected");

// FNV-1a; only used to detect ranks that disagree on the spec, never to group.
uint64_t fingerprint(const std::string& text) {
  uint64_t hash = 1469598103934665603ULL;
  for (unsigned char c : text) hash = (hash ^ c) * 1099511628211ULL;
  return hash;
}

struct Exchanged {
  std::vector<std::string> host_ids;
  std::vector<uint64_t> spec_fingerprints;
  std::vector<int> world_ranks;
};

Exchanged exchange_host_ids(MPI_Comm comm, int world_size, const std::string& host_id,
                            const std::string& spec) {
  RankRecord mine{};
  mine.id_length = host_id.size();
  mine.spec_fingerprint = fingerprint(spec);
  int world_rank = 0;
  check_mpi(MPI_Comm_rank(MPI_COMM_WORLD, &world_rank), "MPI_Comm_rank (MPI_COMM_WORLD)");
  mine.world_rank = static_cast<uint64_t>(world_rank);
  std::memcpy(mine.id, host_id.data(), std::min(host_id.size(), kInlineIdBytes));
  std::vector<RankRecord> all(world_size);
  check_mpi(MPI_Allgather(&mine, sizeof(RankRecord), MPI_BYTE, all.data(), sizeof(RankRecord),
                          MPI_BYTE, comm),
            "MPI_Allgather (host ids)");

  Exchanged result;
  bool all_inline = true;
  uint64_t total_length = 0;
  for (const RankRecord& record : all) {
    all_inline = all_inline && record.id_length <= kInlineIdBytes;
    total_length += record.id_length;
    result.spec_fingerprints.push_back(record.spec_fingerprint);
    result.world_ranks.push_back(static_cast<int>(record.world_rank));
  }
  if (all_inline) {
    for (const RankRecord& record : all) result.host_ids.emplace_back(record.id, record.id_length);
    return result;
  }
  // Every rank saw the same lengths, so every rank takes this branch together.
  MATEX_REQUIRE(total_length <= INT_MAX, MATEX_ERR_CONFIG,
                "host ids are too long to exchange (" + std::to_string(total_length) +
                    " bytes in all); shorten MATEX_HOSTID");
  std::vector<int> counts(world_size);
  std::vector<int> offsets(world_size);
  int offset = 0;
  for (int r = 0; r < world_size; ++r) {
    counts[r] = static_cast<int>(all[r].id_length);
    offsets[r] = offset;
    offset += counts[r];
  }
  std::string joined(total_length, '\0');
  check_mpi(MPI_Allgatherv(host_id.data(), static_cast<int>(host_id.size()), MPI_CHAR,
                           joined.data(), counts.data(), offsets.data(), MPI_CHAR, comm),
            "MPI_Allgatherv (long host ids)");
  for (int r = 0; r < world_size; ++r) result.host_ids.push_back(joined.substr(offsets[r], counts[r]));
  return result;
}

void require_same_spec_everywhere(const Exchanged& exchanged, const std::string& spec) {
  const std::vector<uint64_t>& prints = exchanged.spec_fingerprints;
  for (size_t r = 1; r < prints.size(); ++r) {
    if (prints[r] != prints[0]) {
      MATEX_RAISE(MATEX_ERR_CONFIG,
                  "MATEX_VIRTUAL_NODES must be the same on every rank, but rank " +
                      std::to_string(r) + " has a different value than rank 0 (this rank has \"" +
                      spec + "\")");
    }
  }
}

// Virtual nodes split MPI_COMM_WORLD's ranks, so a member of any communicator
// lives on the virtual node of its world rank. They subdivide hosts: one that
// spans two hosts could not share memory.
Layout assign_virtual_nodes(int rank, const std::string& spec, const Exchanged& exchanged) {
  int world_size = 0;
  check_mpi(MPI_Comm_size(MPI_COMM_WORLD, &world_size), "MPI_Comm_size (MPI_COMM_WORLD)");
  const std::vector<int> sizes = parse_virtual_nodes(spec, world_size);
  std::vector<int> node_of_world_rank;
  for (int node = 0; node < static_cast<int>(sizes.size()); ++node) {
    node_of_world_rank.insert(node_of_world_rank.end(), sizes[node], node);
  }
  const int members = static_cast<int>(exchanged.world_ranks.size());
  std::vector<int> node_ids(members);
  std::map<int, int> first_member_of_node;
  for (int r = 0; r < members; ++r) {
    const int node = node_of_world_rank.at(exchanged.world_ranks[r]);
    node_ids[r] = node;
    const int first = first_member_of_node.emplace(node, r).first->second;
    if (exchanged.host_ids[r] != exchanged.host_ids[first]) {
      MATEX_RAISE(MATEX_ERR_CONFIG,
                  "MATEX_VIRTUAL_NODES=\"" + spec + "\": virtual node " + std::to_string(node) +
                      " spans two hosts (world rank " + std::to_string(exchanged.world_ranks[first]) + " on \"" +
                      exchanged.host_ids[first] + "\", world rank " + std::to_string(exchanged.world_ranks[r]) +
                      " on \"" + exchanged.host_ids[r] + "\"); a virtual node must lie within one host");
    }
  }
  return layout_from_assignment(rank, node_ids, exchanged.host_ids, true);
}

// Hosts are the nodes: ranks with equal host ids share one (numbered by
// first appearance, as layout_from_assignment does).
Layout assign_host_nodes(int rank, const std::vector<std::string>& host_ids) {
  std::map<std::string, int> node_of_host;
  std::vector<int> node_ids;
  for (const std::string& host : host_ids) {
    node_ids.push_back(node_of_host.emplace(host, static_cast<int>(node_of_host.size())).first->second);
  }
  return layout_from_assignment(rank, node_ids, host_ids, false);
}

}  // namespace

int Layout::min_local_size() const {
  if (node_sizes.empty()) return 0;
  return *std::min_element(node_sizes.begin(), node_sizes.end());
}

bool Layout::uniform() const {
  return std::all_of(node_sizes.begin(), node_sizes.end(),
                     [this](int size) { return size == node_sizes.front(); });
}

Layout discover_layout(MPI_Comm comm, const std::string& virtual_nodes_spec,
                       const std::string& host_id) {
  int rank = 0;
  int size = 0;
  check_mpi(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
  check_mpi(MPI_Comm_size(comm, &size), "MPI_Comm_size");
  Exchanged exchanged = exchange_host_ids(comm, size, host_id, virtual_nodes_spec);
  require_same_spec_everywhere(exchanged, virtual_nodes_spec);
  if (!virtual_nodes_spec.empty()) return assign_virtual_nodes(rank, virtual_nodes_spec, exchanged);
  return assign_host_nodes(rank, exchanged.host_ids);
}

}  // namespace matexcomm::topo
