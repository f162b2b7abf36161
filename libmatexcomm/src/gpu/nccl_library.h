// nccl_library.h - the NCCL functions libmatexcomm calls, found at run time.
//
// Why: PyTorch's pip wheel ships its own NCCL under the soname libnccl.so.2,
// the same soname as the system NCCL. Linking libmatexcomm against NCCL made
// the dynamic loader bring the system copy in whenever libmatexcomm was
// loaded, and since one soname maps to one library per process, a later
// `import torch` bound torch to that copy and failed on symbols only its own
// NCCL has (e.g. ncclCommResume). So libmatexcomm does not link NCCL at all
// and loads it with dlopen the first time the GPU path needs a communicator.
//
// Resolution order, once per process (thread-safe):
//   1. an NCCL already in the process: dlopen("libnccl.so.2", RTLD_NOLOAD),
//      which is torch's when torch was imported first;
//   2. otherwise dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL) by the normal
//      search path (LD_LIBRARY_PATH, the ld.so cache, ...).
// The handle is never closed: communicators may live until exit.
//
// Consequence: if the GPU path runs before torch is imported, step 2 puts the
// system NCCL in the process, and a later `import torch` on a GPU machine can
// still fail as above. Import torch first (docs/gpu.md).
//
// With MATEX_NCCL_LINKED defined (the CPU fake of tests/gpu, which defines
// the nccl* functions itself) the table holds the linked functions instead.
#pragma once

#include <nccl.h>

namespace matexcomm::gpu {

struct NcclLibrary {
  decltype(&::ncclGetUniqueId) ncclGetUniqueId = nullptr;
  decltype(&::ncclCommInitRank) ncclCommInitRank = nullptr;
  decltype(&::ncclCommDestroy) ncclCommDestroy = nullptr;
  decltype(&::ncclCommAbort) ncclCommAbort = nullptr;
  decltype(&::ncclGetErrorString) ncclGetErrorString = nullptr;
  decltype(&::ncclGroupStart) ncclGroupStart = nullptr;
  decltype(&::ncclGroupEnd) ncclGroupEnd = nullptr;
  decltype(&::ncclAllReduce) ncclAllReduce = nullptr;
  decltype(&::ncclBroadcast) ncclBroadcast = nullptr;
  decltype(&::ncclReduce) ncclReduce = nullptr;
  decltype(&::ncclReduceScatter) ncclReduceScatter = nullptr;
  decltype(&::ncclAllGather) ncclAllGather = nullptr;
};

// The table, loaded on the first call. Throws Error(MATEX_ERR_DEVICE) naming
// the library or symbol and dlerror() when NCCL cannot be loaded; the first
// attempt is the only one, later calls throw the same message.
const NcclLibrary& nccl_library();

}  // namespace matexcomm::gpu
