// cuda_aware_mpi.h - whether the MPI library can take device pointers.
#pragma once

#include <string>

namespace matexcomm::gpu {

// setting: the value of MATEX_CUDA_AWARE_MPI ("auto", "0" or "1"). auto asks
// the MPI library (Open MPI's MPIX_Query_cuda_support, at run time, where the
// header declares it; false for MPIs that do not say). `how` receives how the
// answer was reached, for the log. Local: callers agree across ranks.
bool mpi_accepts_device_memory(const std::string& setting, std::string* how);

}  // namespace matexcomm::gpu
