// selector_tuning_file.cc - auto's allreduce table, and its broadcast
// table where the hierarchy can help, from a tuning file (MATEX_CALIBRATE=file;
// the file: core/tuning_file.h, written by matex-tune).
//
// Rank 0 alone reads the file and checks that it was measured by this
// library version, on this kind of host, in this layout (tuning_mismatch);
// a file that does not fit is refused with a warning that names the
// mismatch, and the table is measured at init instead (under =auto: the
// fixed sizes are kept, and a missing file is no warning). Rank 0 then
// broadcasts whether the file served, so every rank takes the same path.
// Cost: reading a few kilobytes and one hwloc topology load on rank 0; one
// MPI_Bcast of an int.
// Preconditions: the rest of the constructor is done; allreduce is under auto.
#include <sys/stat.h>

#include <cerrno>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "select/selector.h"
#include "core/error.h"
#include "core/logging.h"
#include "core/tuning_file.h"

namespace matexcomm {

namespace {

// One algorithm's time at `bytes` (negative when it was not measured there).
double time_at(const std::map<std::string, AlgorithmCost>& algorithms, const std::string& name, uint64_t bytes) {
  auto found = algorithms.find(name);
  if (found == algorithms.end()) return -1;
  for (const TimedSize& point : found->second.measured) {
    if (point.bytes == bytes) return point.seconds;
  }
  return -1;
}

}  // namespace

AllreduceTable Selector::table_from_tuning(const TuningFile& file) const {
  auto allreduce = file.collectives.find("allreduce");
  if (allreduce == file.collectives.end() || allreduce->second.count("flat") == 0) {
    throw Error(MATEX_ERR_INVALID_ARG, "it has no allreduce timings of flat");
  }
  static const std::map<std::string, AlgorithmCost> kNone;
  auto in_place = file.collectives.find("allreduce_in_place");
  const auto& out_of_place_times = allreduce->second;
  const auto& in_place_times = in_place == file.collectives.end() ? kNone : in_place->second;
  const auto& flat_times = out_of_place_times.at("flat").measured;
  if (flat_times.empty() || flat_times.size() > AllreduceTable::kMaxMeasurements) {
    throw Error(MATEX_ERR_INVALID_ARG, "it has " + std::to_string(flat_times.size()) +
                                           " allreduce sizes of flat (1 to " +
                                           std::to_string(AllreduceTable::kMaxMeasurements) + " serve)");
  }
  // The families a file can name here: single copies only where CMA works.
  std::vector<std::pair<AllreduceFamily, std::string>> families = {
      {AllreduceFamily::kSmall, algorithm_info(MATEX_COLL_ALLREDUCE, small_family_algorithm(context_)).name},
      {AllreduceFamily::kCopies, algorithm_info(MATEX_COLL_ALLREDUCE, kAllreduceRsArAg).name}};
  if (context_.single_copy_ok) {
    families.emplace_back(AllreduceFamily::kSingleCopy, algorithm_info(MATEX_COLL_ALLREDUCE, kAllreduceRsArAgCma).name);
  }
  std::vector<AllreduceTable::Measurement> measured;
  for (const TimedSize& flat : flat_times) {
    AllreduceTable::Measurement m;
    m.bytes = flat.bytes;
    m.seconds[static_cast<int>(AllreduceFamily::kFlat)] = flat.seconds;
    for (const auto& [family, name] : families) {
      m.seconds[static_cast<int>(family)] = time_at(out_of_place_times, name, flat.bytes);
      if (is_rail_family(family)) m.in_place_seconds[static_cast<int>(family)] = time_at(in_place_times, name, flat.bytes);
    }
    measured.push_back(m);
  }
  // A negative measuring cost marks a table that came from a file.
  return AllreduceTable::from_measurements(std::move(measured), -1, file.cores_shared);
}

BroadcastTable Selector::broadcast_table_from_tuning(const TuningFile& file) const {
  const bool hierarchy_helps = broadcast_hierarchy_helps(context_);
  auto broadcast = file.collectives.find("broadcast");
  if (!hierarchy_helps || broadcast == file.collectives.end() || broadcast->second.count("flat") == 0) return {};
  std::vector<BroadcastTable::Timing> timings;
  for (const TimedSize& flat : broadcast->second.at("flat").measured) {
    const double hier = time_at(broadcast->second, "hier", flat.bytes);
    if (hier > 0) timings.push_back({flat.bytes, flat.seconds, hier});
  }
  if (timings.empty()) return {};
  return BroadcastTable::from_timings(std::move(timings));
}

bool Selector::load_tuning_table(AllreduceTable* table, BroadcastTable* broadcast, bool optional) {
  int served = 0;
  if (layout_.world_rank == 0) {
    std::string path = config_.get_string("MATEX_TUNING_FILE");
    if (path.empty()) path = default_tuning_path();
    const std::string mode = optional ? "MATEX_CALIBRATE=auto: " : "MATEX_CALIBRATE=file: ";
    const std::string instead = optional ? "; keeping the fixed sizes (matex-tune writes a file for this layout)"
                                         : "; measuring at init instead (matex-tune writes a file for this layout)";
    struct stat status;
    if (optional && ::stat(path.c_str(), &status) != 0 && errno == ENOENT) {
      MATEX_LOG(LogLevel::kDebug, "no tuning file at " + path + ": auto keeps the fixed sizes");
    } else {
      try {
        const TuningFile file = TuningFile::read(path);
        const std::string why = tuning_mismatch(file.identity, tuning_identity());
        if (why.empty()) {
          *table = table_from_tuning(file);
          *broadcast = broadcast_table_from_tuning(file);
          served = 1;
          MATEX_LOG(LogLevel::kInfo, std::string(broadcast->bands.empty() ? "allreduce table" : "allreduce and broadcast tables") +
                                         " from the tuning file " + path + " (measured " + file.created + ")");
        } else {
          MATEX_LOG(LogLevel::kWarn, mode + "refusing the tuning file " + path + ": " + why + instead);
        }
      } catch (const std::exception& e) {
        MATEX_LOG(LogLevel::kWarn, mode + e.what() + instead);
      }
    }
  }
  check_mpi(MPI_Bcast(&served, 1, MPI_INT, 0, world_), "MPI_Bcast of whether the tuning file served");
  return served != 0;
}

}  // namespace matexcomm
