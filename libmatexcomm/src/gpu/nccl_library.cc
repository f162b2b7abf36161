#include "gpu/nccl_library.h"

#include <string>

#include "core/error.h"

#ifndef MATEX_NCCL_LINKED
#include <dlfcn.h>
#include <link.h>
#endif

namespace matexcomm::gpu {
namespace {

// Every member of NcclLibrary, in its order.
#define MATEX_NCCL_FOR_EACH(X) \
  X(ncclGetUniqueId) \
  X(ncclCommInitRank) \
  X(ncclCommDestroy) \
  X(ncclCommAbort) \
  X(ncclGetErrorString) \
  X(ncclGroupStart) \
  X(ncclGroupEnd) \
  X(ncclAllReduce) \
  X(ncclBroadcast) \
  X(ncclReduce) \
  X(ncclReduceScatter) \
  X(ncclAllGather)

struct Loaded {
  NcclLibrary table;
  std::string problem;  // empty when every entry is set
};

#ifdef MATEX_NCCL_LINKED

#define MATEX_NCCL_ENTRY(name) loaded.table.name = &::name;

Loaded load() {
  Loaded loaded;
  MATEX_NCCL_FOR_EACH(MATEX_NCCL_ENTRY)
  return loaded;
}

#else

constexpr const char* kSoname = "libnccl.so.2";

std::string last_dl_error() {
  const char* message = dlerror();
  return message != nullptr ? message : "no dlerror message";
}

// The file the handle stands for, for messages.
std::string loaded_path(void* handle) {
  link_map* map = nullptr;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map != nullptr && map->l_name != nullptr &&
      map->l_name[0] != '\0') {
    return map->l_name;
  }
  return kSoname;
}

template <typename Function>
void resolve(void* handle, const char* name, Function& slot, std::string& problem) {
  if (!problem.empty()) return;
  (void)dlerror();
  void* symbol = dlsym(handle, name);
  if (symbol == nullptr) {
    problem = "NCCL (" + loaded_path(handle) + ") has no symbol " + name + ": " + last_dl_error();
    return;
  }
  slot = reinterpret_cast<Function>(symbol);
}

#define MATEX_NCCL_ENTRY(name) resolve(handle, #name, loaded.table.name, loaded.problem);

Loaded load() {
  Loaded loaded;
  // The handle is kept for the life of the process on purpose (see the header).
  void* handle = dlopen(kSoname, RTLD_NOW | RTLD_NOLOAD);
  if (handle == nullptr) {
    (void)dlerror();  // not loaded yet: not an error
    handle = dlopen(kSoname, RTLD_NOW | RTLD_LOCAL);
  }
  if (handle == nullptr) {
    loaded.problem = std::string("cannot load NCCL (") + kSoname + "): " + last_dl_error();
    return loaded;
  }
  MATEX_NCCL_FOR_EACH(MATEX_NCCL_ENTRY)
  if (!loaded.problem.empty()) loaded.table = NcclLibrary{};
  return loaded;
}

#endif

#undef MATEX_NCCL_ENTRY
#undef MATEX_NCCL_FOR_EACH

}  // namespace

const NcclLibrary& nccl_library() {
  static const Loaded loaded = load();  // C++11 guarantees one thread-safe initialization
  if (!loaded.problem.empty()) MATEX_RAISE(MATEX_ERR_DEVICE, loaded.problem);
  return loaded.table;
}

}  // namespace matexcomm::gpu
