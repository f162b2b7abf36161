// selector_calibrate.cc - auto's allreduce table, measured when a
// communicator is created (MATEX_CALIBRATE=init; see select/allreduce_table.h),
// or read from a tuning file (=file, and =auto where one exists;
// selector_tuning_file.cc), which gives the broadcast table too
// (select/broadcast_table.h; init times no broadcast).
//
// Steps: 1. agree whether every rank already holds a table for this layout's
//           shape (an earlier communicator of the same shape in this process):
//           then rank 0's is broadcast and nothing is timed;
//        2. otherwise, under =file or =auto, take rank 0's tuning file if it
//           fits, for allreduce and broadcast (=auto without one keeps the
//           fixed sizes);
//        3. otherwise time each family at kSizes, out of place, float32 sums,
//           each call after a barrier, in rounds over all of them: a warm-up
//           (up to 256 KiB), then two that count, and two more for the sizes up to 16 KiB,
//           whose calls cost microseconds and whose times preemption on
//           shared cores moves most (the fastest of a size's rounds counts);
//        4. rank 0 receives the slowest rank's times (MPI_Reduce, max), draws
//           the bands up to 1 MiB and broadcasts them, so every rank chooses
//           alike. Past 1 MiB the rail family serves, the one built for
//           bandwidth: at 1 MiB the data still sits in the caches, and on 3,1
//           here flat wins there by 25-60 % and loses by 2x at 64 MiB, which
//           no extrapolation of the cached times foresees. With one rank per
//           node too (1,1,1,1: MPI's allreduce in pieces, 50-63 ms at 64 MiB
//           against 92-97 ms for one call).
// Cost: three calls per family and size (two at 1 MiB, five up to 16 KiB),
//   each after a barrier, timed from a barrier: medians 4.3 ms on 2 ranks of
//   one node here, 13-15 ms on 4 ranks (one node, 2,2, 3,1; docs/algorithms.md);
//   then one MPI_Allreduce of an int and one MPI_Bcast of 900 doubles (the
//   allreduce and broadcast tables' room, 7 KB) for every communicator,
//   including the further ones of that shape, which time nothing.
// Preconditions: the communicator is complete but for its Selector's start
//   (shared memory agreed); allreduce is not forced (a forced algorithm needs
//   no table).
#include <algorithm>
#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "select/selector.h"
#include "core/error.h"
#include "core/logging.h"
#include "core/mpi_handles.h"

namespace matexcomm {

namespace {

// Sizes timed, and the largest at which the small family still is (it only
// ever wins while latency dominates).
constexpr size_t kSizes[] = {64, 1024, 16 * 1024, 256 * 1024, 1024 * 1024};
constexpr size_t kMeasurements = sizeof kSizes / sizeof kSizes[0];
constexpr size_t kSmallFamilyMaxBytes = 16 * 1024;
constexpr int kTimedRounds = 2;  // after one warm-up round
// The warm-up round stops here: by then every family has met its first-call
// costs (MPI's lazy set-up, the first cross-memory attach, the first touch of
// the segment's pages, reserved before the clock starts). What the largest
// size adds (its pages past this size) burdens its first timed round, and the
// faster round counts.
constexpr size_t kWarmUpMaxBytes = 256 * 1024;
constexpr int kSmallSizeTimedRounds = 4;  // sizes up to kSmallFamilyMaxBytes
constexpr int kTimedFamilies = 3;  // flat, small and rail: the first three AllreduceFamily values

// Tables already measured or read in this process, by layout shape.
struct SelectionTables {
  std::shared_ptr<const AllreduceTable> allreduce;
  std::shared_ptr<const BroadcastTable> broadcast;  // null: the fixed rule
};
std::mutex g_tables_mutex;
std::map<std::string, SelectionTables>& tables_by_shape() {
  static auto* tables = new std::map<std::string, SelectionTables>;  // never freed
  return *tables;
}

AllreduceTable one_family(AllreduceFamily family) {
  AllreduceTable table;
  table.bands.push_back({~uint64_t{0}, family, family});
  return table;
}

}  // namespace

double Selector::time_family(const AllreduceTable& only, size_t bytes, float* send, float* recv,
                             const AllreduceCall& call) {
  // Auto runs `only`'s family at every size for this call, also if it throws.
  struct Forced {
    AllreduceThresholds& sizes;
    ~Forced() { sizes.table = nullptr; }
  } forced{thresholds_};
  thresholds_.table = &only;
  // Every rank starts together, so no call's time holds the skew that the one before left.
  check_mpi(MPI_Barrier(world_), "MPI_Barrier before a calibration call");
  const double start = MPI_Wtime();
  call(bytes, send, recv);
  return std::max(MPI_Wtime() - start, 1e-9);
}

AllreduceTable Selector::measure_allreduce_table(const AllreduceCall& call) {
  // The clock starts when every rank is here: the skew with which the ranks
  // leave the constructor (up to 4 ms at np 4 here) is not the calibration's;
  // without it, the first collective of any kind would absorb it.
  // Node buffers are reserved on first use: the calibration times none of
  // that. Every rank learns whether all could (a rank that could not has
  // abandoned its node's channel), instead of a barrier.
  std::string failure;
  if (context_.shm != nullptr) {
    try {
      context_.shm->reserve(kSizes[kMeasurements - 1]);
    } catch (const Error& error) {
      failure = error.message();
    }
  }
  int reserved = failure.empty() ? 1 : 0;
  int everywhere = 0;
  check_mpi(MPI_Allreduce(&reserved, &everywhere, 1, MPI_INT, MPI_MIN, world_),
            "MPI_Allreduce before the calibration");
  if (!everywhere) {
    MATEX_RAISE(MATEX_ERR_SYSTEM, failure.empty() ? "a rank could not reserve shared memory for the calibration at init"
                                                  : failure);
  }
  const double start = MPI_Wtime();
  // The receive buffer is left uninitialized: every call writes it.
  const size_t largest = kSizes[kMeasurements - 1] / sizeof(float);
  std::unique_ptr<float[]> send(new float[largest]);
  std::unique_ptr<float[]> recv(new float[largest]);
  for (size_t i = 0; i < largest; ++i) send[i] = static_cast<float>((i + layout_.world_rank) % 8);
  // Per size: the three families' seconds (negative: not timed), then the whole cost.
  std::vector<double> mine(kMeasurements * kTimedFamilies + 1, -1);
  const AllreduceTable only[kTimedFamilies] = {one_family(AllreduceFamily::kFlat),
                                                   one_family(AllreduceFamily::kSmall),
                                                   one_family(AllreduceFamily::kRail)};
  // Rounds over every size and family, so that what warms up (first touches
  // of the shared segment, MPI's lazy set-up) burdens the first, untimed one;
  // the fastest of the timed calls counts, as preemption only ever adds.
  for (int round = 0; round <= kSmallSizeTimedRounds; ++round) {
    for (size_t i = 0; i < kMeasurements; ++i) {
      if (round == 0 && kSizes[i] > kWarmUpMaxBytes) continue;
      if (round > kTimedRounds && kSizes[i] > kSmallFamilyMaxBytes) continue;
      for (int f = 0; f < kTimedFamilies; ++f) {
        const AllreduceFamily family = static_cast<AllreduceFamily>(f);
        if (family == AllreduceFamily::kSmall && kSizes[i] > kSmallFamilyMaxBytes) continue;
        const double seconds = time_family(only[f], kSizes[i], send.get(), recv.get(), call);
        double& best = mine[i * kTimedFamilies + f];
        if (round > 0) best = best < 0 ? seconds : std::min(best, seconds);
      }
    }
  }
  mine.back() = MPI_Wtime() - start;
  std::vector<double> slowest(mine.size(), 0);
  check_mpi(MPI_Reduce(mine.data(), slowest.data(), static_cast<int>(mine.size()), MPI_DOUBLE, MPI_MAX, 0,
                       world_),
            "MPI_Reduce of calibration times");
  if (layout_.world_rank != 0) return {};
  std::vector<AllreduceTable::Measurement> measured(kMeasurements);
  for (size_t i = 0; i < kMeasurements; ++i) {
    measured[i].bytes = kSizes[i];
    for (int f = 0; f < kTimedFamilies; ++f) measured[i].seconds[f] = slowest[i * kTimedFamilies + f];
  }
  // Past 1 MiB the rail family serves (allreduce_table.h).
  return AllreduceTable::from_measurements(std::move(measured), slowest.back(), cores_shared_anywhere_,
                                           AllreduceFamily::kRail);
}

void Selector::calibrate(const AllreduceCall& call) {
  const std::string mode = config_.get_string("MATEX_CALIBRATE");
  if (mode == "off" || !allreduce_is_auto()) return;
  if (!auto_has_allreduce_choice(context_)) return;  // flat is all there is
  // A table is reused only for the same shape and the same source (init, or
  // this rank's tuning file path under file / auto).
  std::string tuning_path = config_.get_string("MATEX_TUNING_FILE");
  if (tuning_path.empty()) tuning_path = default_tuning_path();
  const std::string shape = layout_shape() + ";source=" + (mode == "init" ? std::string("init") : tuning_path);
  SelectionTables known;
  {
    std::lock_guard<std::mutex> lock(g_tables_mutex);
    auto found = tables_by_shape().find(shape);
    if (found != tables_by_shape().end()) known = found->second;
  }
  int have = known.allreduce ? 1 : 0;
  int everyone_has = 0;
  check_mpi(MPI_Allreduce(&have, &everyone_has, 1, MPI_INT, MPI_MIN, world_), "MPI_Allreduce of known tables");
  AllreduceTable table;
  BroadcastTable broadcast;  // from a tuning file only; init times no broadcast
  if (everyone_has) {
    if (layout_.world_rank == 0) {
      table = *known.allreduce;
      if (known.broadcast) broadcast = *known.broadcast;
    }
  } else {
    const bool from_file = mode != "init" && load_tuning_table(&table, &broadcast, mode == "auto");
    if (!from_file && mode == "auto") return;  // no fitting file: the fixed sizes (every rank knows alike)
    if (!from_file) table = measure_allreduce_table(call);
  }
  // Rank 0's tables, on every rank, in one message: the allreduce table, then the broadcast table.
  std::vector<double> data = table.serialize();
  data.resize(AllreduceTable::serialized_capacity(), 0);
  const std::vector<double> broadcast_data = broadcast.serialize();
  data.insert(data.end(), broadcast_data.begin(), broadcast_data.end());
  data.resize(AllreduceTable::serialized_capacity() + BroadcastTable::serialized_capacity(), 0);
  check_mpi(MPI_Bcast(data.data(), static_cast<int>(data.size()), MPI_DOUBLE, 0, world_),
            "MPI_Bcast of the selection tables");
  const auto broadcast_part = data.begin() + static_cast<std::ptrdiff_t>(AllreduceTable::serialized_capacity());
  allreduce_table_ = std::make_shared<const AllreduceTable>(
      AllreduceTable::deserialize(std::vector<double>(data.begin(), broadcast_part)));
  thresholds_.table = allreduce_table_.get();
  BroadcastTable received = BroadcastTable::deserialize(std::vector<double>(broadcast_part, data.end()));
  if (!received.bands.empty()) broadcast_table_ = std::make_shared<const BroadcastTable>(std::move(received));
  if (!everyone_has) {
    std::lock_guard<std::mutex> lock(g_tables_mutex);
    tables_by_shape()[shape] = {allreduce_table_, broadcast_table_};
  }
  if (!everyone_has && allreduce_table_->calibration_seconds >= 0) {
    MATEX_LOG(LogLevel::kInfo, "allreduce calibrated in " + std::to_string(allreduce_table_->calibration_seconds * 1e3) +
                                   " ms (matex-bench --explain shows the table)");
  }
}

}  // namespace matexcomm
