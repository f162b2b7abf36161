// cma_copy.h - single-copy transfers between processes of one node through
// Linux cross-memory attach (process_vm_readv / process_vm_writev): the
// kernel copies straight from one process's memory into another's, so data
// crosses the memory system once instead of twice through a shared segment.
//
// Needs the same user and ptrace permission (no Yama restriction, no seccomp
// filter blocking the calls, as in some containers); cma_probe() tells, and
// the communicator falls back to the shared-memory copies when any local rank
// cannot use it.
#pragma once

#include <sys/types.h>

#include <cstddef>

namespace matexcomm {

// Copies `bytes` from address `remote` in process `pid` to `local`.
// Throws Error(MATEX_ERR_SYSTEM) naming the pid on failure.
void cma_read(pid_t pid, const void* remote, void* local, size_t bytes);
// Copies `bytes` from `local` to address `remote` in process `pid`.
void cma_write(pid_t pid, void* remote, const void* local, size_t bytes);
// True when this process can read `remote` (`bytes` long, holding `expected`)
// in process `pid`: the check run once per peer when a communicator is created.
bool cma_probe(pid_t pid, const void* remote, const void* expected, size_t bytes);

}  // namespace matexcomm
