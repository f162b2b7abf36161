#include "comm/watchdog_verdict.h"

#include <algorithm>
#include <cstdio>

namespace matexcomm {
namespace {

// A timed answer later than this, and 4 x later than the fastest, crossed a slow link: 1 MiB takes 0.084 s
// at 100 Mbit/s and 0.008 s at 1 Gbit/s.
constexpr double kSlowAnswerSeconds = 0.05;

std::string ranks_of_node(const topo::Layout& layout, int node) {
  std::string text;
  int count = 0;
  for (int r = 0; r < layout.world_size; ++r) {
    if (layout.node_of_rank[r] != node) continue;
    text += (count++ ? "," : "") + std::to_string(r);
  }
  return (count == 1 ? "rank " : "ranks ") + text;
}

}  // namespace

std::string name_nodes(const std::vector<int>& nodes, const topo::Layout& layout) {
  std::string text;
  for (size_t i = 0; i < nodes.size(); ++i) {
    text += (i ? ", " : "") + watchdog_host_name(layout, nodes[i]) + " (" +
            ranks_of_node(layout, nodes[i]) + ")";
  }
  return text;
}

std::string format_seconds(double seconds) {
  char text[32];
  std::snprintf(text, sizeof text, seconds < 0.1 ? "%.3f s" : "%.1f s", seconds);
  return text;
}

std::string watchdog_host_name(const topo::Layout& layout, int node) {
  std::string id = node < static_cast<int>(layout.node_hosts.size()) ? layout.node_hosts[node] : "";
  id = id.substr(0, id.find('/'));
  if (layout.virtual_nodes || id.empty()) return "node " + std::to_string(node) + (id.empty() ? "" : " on " + id);
  return id;
}

std::string judge_probes(const std::vector<ProbeAnswer>& results, const topo::Layout& layout, bool timed) {
  if (results.empty()) return "no other host to probe";
  const std::string self = watchdog_host_name(layout, layout.node_index);
  double fastest = -1;
  std::string answers;
  for (const ProbeAnswer& r : results) {
    if (r.seconds < 0) continue;
    if (fastest < 0 || r.seconds < fastest) fastest = r.seconds;
    answers += (answers.empty() ? "" : ", ") + watchdog_host_name(layout, r.node) + " in " + format_seconds(r.seconds);
  }
  const std::string answered = answers.empty() ? "" : " (answered: " + answers + ")";
  // Slow: late in itself, and 4 x later than the fastest answer (a busy but healthy network delays all alike).
  const double slow = std::max(kSlowAnswerSeconds, 4 * fastest);
  std::vector<int> silent, slow_nodes;
  for (const ProbeAnswer& r : results) {
    if (r.seconds < 0) silent.push_back(r.node);
    if (timed && (r.seconds >= slow || (r.seconds >= kSlowAnswerSeconds && fastest >= kSlowAnswerSeconds))) {
      slow_nodes.push_back(r.node);
    }
  }
  const size_t prompt = results.size() - silent.size() - slow_nodes.size();
  const bool several = results.size() > 1;
  if (silent.size() == results.size()) {
    if (several) return "this host (" + self + ") reaches none of the other hosts: its own link or network is the likely fault";
    return name_nodes(silent, layout) + " does not answer: it, or the link between it and this host (" + self +
           "), is down";
  }
  if (!silent.empty()) {  // an answer, however slow, shows that this host's own link works
    return name_nodes(silent, layout) + (silent.size() == 1 ? " does" : " do") +
           " not answer while the other hosts do" + answered + ": the likely fault";
  }
  if (several && prompt == 0) {
    return "every other host answers slowly" + answered + ": this host's (" + self +
           ") own link is the likely bottleneck, or the whole network is congested";
  }
  if (slow_nodes.empty()) {
    return "every host answers promptly" + answered + ": they are alive, busy elsewhere or in another call";
  }
  if (several) {
    return name_nodes(slow_nodes, layout) + " answer" + (slow_nodes.size() == 1 ? "s" : "") +
           " slowly while the others are prompt" + answered + ": " + (slow_nodes.size() == 1 ? "its" : "their") +
           " link is the likely bottleneck";
  }
  return name_nodes(slow_nodes, layout) + " answers slowly" + answered + ": the link between it and this host (" +
         self + ") is slow or congested";
}

}  // namespace matexcomm
