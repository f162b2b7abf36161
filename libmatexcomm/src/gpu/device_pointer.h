// device_pointer.h - where a pointer lives, and whether this process can use
// a GPU at all.
#pragma once

#include <string>

namespace matexcomm::gpu {

enum class MemoryKind { kHost, kDevice };

// kDevice for cudaMalloc'd memory (and managed memory, which kernels and NCCL
// can use too); kHost for anything else, including pinned host memory and
// pointers the CUDA runtime does not know. Cheap (no synchronization); never
// throws: without a usable GPU everything is host memory.
MemoryKind memory_kind(const void* pointer);

// The ordinal of the GPU that holds device memory `pointer`, or -1.
int device_of(const void* pointer);

// Makes the GPU that holds `pointer` current on the calling thread (the
// engine's thread starts on GPU 0 whatever the user chose). No-op for host
// memory.
void select_device_of(const void* pointer);

// Number of usable GPUs (0 when there is no driver or no device), and why
// there are none, for messages ("no GPU: ...").
int usable_device_count(std::string* why_none = nullptr);

}  // namespace matexcomm::gpu
