// watchdog_verdict.h - the collective watchdog's verdict (comm/collective_watchdog.h): from the answers
// of one probe to every other node, or their absence, the sentence that names the host at fault.
//
// Rules: no answer from some nodes while others answer: those nodes (or their links) are the fault. No
// answer from any of several: this host's own link. Timed probes (a payload, `seconds` being the time the
// payload added): an answer later than 50 ms and 4 x later than the fastest crossed a slow link; all of
// several that slow: this host's own link, or the whole network. One other node only: silence names it
// or the link between, which two hosts cannot tell apart.
// Cost: linear in the ranks (to name each node's ranks). Preconditions: `answers` hold nodes of `layout`
// other than its own.
#pragma once

#include <string>
#include <vector>

#include "topology/layout.h"

namespace matexcomm {

struct ProbeAnswer {
  int node = 0;        // a node other than this rank's
  double seconds = -1; // its answer's time (timed: the time its payload added); < 0: no answer in the window
};

// `timed`: the probes carried a payload, so their speed tells a slow link; else only silence counts.
std::string judge_probes(const std::vector<ProbeAnswer>& answers, const topo::Layout& layout, bool timed = true);
// The host id of `node` without its boot id ("node K on H" for virtual nodes).
std::string watchdog_host_name(const topo::Layout& layout, int node);
// "h3 (rank 2), h4 (ranks 3,4)".
std::string name_nodes(const std::vector<int>& nodes, const topo::Layout& layout);
// "0.004 s", "1.5 s".
std::string format_seconds(double seconds);

}  // namespace matexcomm
