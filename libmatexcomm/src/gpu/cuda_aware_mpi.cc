#include "gpu/cuda_aware_mpi.h"

#include <mpi.h>
#if defined(OPEN_MPI) && OPEN_MPI
#include <mpi-ext.h>
#endif

namespace matexcomm::gpu {

bool mpi_accepts_device_memory(const std::string& setting, std::string* how) {
  if (setting == "1" || setting == "0") {
    *how = "MATEX_CUDA_AWARE_MPI=" + setting;
    return setting == "1";
  }
#if defined(MPIX_CUDA_AWARE_SUPPORT)
  // Asked at run time: the library loaded may be another build than the
  // header's (whose MPIX_CUDA_AWARE_SUPPORT only describes the build machine's).
  const bool aware = MPIX_Query_cuda_support() == 1;
  *how = std::string("MPIX_Query_cuda_support() = ") + (aware ? "1" : "0");
  return aware;
#else
  *how = "this MPI has no MPIX_Query_cuda_support (not CUDA-aware at build time)";
  return false;
#endif
}

}  // namespace matexcomm::gpu
