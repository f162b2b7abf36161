// config_table.cc - THE table of MATEX_* settings. One row per knob.
#include "core/config.h"

namespace matexcomm {

const std::vector<ConfigEntry>& config_table() {
  static const std::vector<ConfigEntry> kConfigTable = {
      {"MATEX_VIRTUAL_NODES", ConfigType::kString, "", "",
       "Split consecutive world ranks into virtual nodes of these sizes, e.g. 2,2 or 3,1; "
       "they must add up to the world size. Empty: group by host id."},
      {"MATEX_HOSTID", ConfigType::kString, "", "",
       "Host identity used to group ranks into nodes. Empty: hostname plus boot id."},
      {"MATEX_TIMEOUT_SECONDS", ConfigType::kSeconds, "120", "",
       "Longest wait for a peer inside a node before the call fails with MATEX_ERR_TIMEOUT "
       "naming the missing rank."},
      {"MATEX_ALLREDUCE_ALGO", ConfigType::kChoice, "auto", "auto|flat|rs_ar_ag|rab",
       "Allreduce algorithm: auto selects by message size."},
      {"MATEX_RAB_MAX_BYTES", ConfigType::kBytes, "64K", "",
       "auto uses the reduce-allreduce-broadcast algorithm up to this message size and "
       "rs_ar_ag above it."},
      {"MATEX_SHM_CHUNK_BYTES", ConfigType::kBytes, "256K", "",
       "Bytes per rank per pipeline step of the shared-memory transport (rounded to 64 B)."},
      {"MATEX_SHM_DISABLE", ConfigType::kBool, "0", "",
       "1: never use shared memory; every algorithm falls back to flat MPI."},
      {"MATEX_LOG_LEVEL", ConfigType::kChoice, "warn", "error|warn|info|debug",
       "Verbosity of messages on stderr; debug adds file:line breadcrumbs to errors."},
  };
  return kConfigTable;
}

}  // namespace matexcomm
