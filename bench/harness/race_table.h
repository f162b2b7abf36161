// race_table.h - the summary of --compare all that rank 0 prints after the
// results: per size and placement, auto's time and algorithm, each forced
// algorithm's time, MPI's, and auto over the fastest of them all.
#pragma once

#include <string>
#include <vector>

#include "result_row.h"

namespace matexbench {

// `forced` names the columns of Measurement::forced_time_us.
std::vector<std::string> race_table(const std::vector<std::string>& forced, const std::vector<ResultRow>& rows);

}  // namespace matexbench
