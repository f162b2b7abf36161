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

// Asks once per process what memory_kind would ask at its first call:
// whether the CUDA runtime finds a GPU (which loads the driver, or searches
// the library path for it in vain: 0.2-0.3 ms on a machine without one), and
// the driver functions that tell whether a context exists. Creating a
// communicator calls it, so that a job's first collective does not pay for it
// (it cost 270 us of a 1 KiB allreduce's 290 on 2 ranks here). Creates no
// context; never throws. The driver thus starts in matex_init: a program
// that sets CUDA_VISIBLE_DEVICES, or forks, must do so before it.
void probe_devices();

// Number of usable GPUs (0 when there is no driver or no device), and why
// there are none, for messages ("no GPU: ...").
int usable_device_count(std::string* why_none = nullptr);

}  // namespace matexcomm::gpu
