#include "transport/cma_copy.h"

#include <sys/uio.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "core/error.h"

namespace matexcomm {

namespace {

// process_vm_{read,write}v may move fewer bytes than asked (at most one
// call's worth of pages at a time), so loop until done.
template <class Transfer>
void transfer_all(Transfer&& transfer, pid_t pid, const char* what, size_t bytes) {
  size_t done = 0;
  while (done < bytes) {
    ssize_t moved = transfer(done);
    if (moved < 0 && errno == EINTR) continue;
    if (moved <= 0) {
      int error = moved < 0 ? errno : EIO;
      MATEX_RAISE(MATEX_ERR_SYSTEM, std::string(what) + " of " + std::to_string(bytes) + " bytes with pid " +
                                        std::to_string(pid) + " failed: " + std::strerror(error));
    }
    done += static_cast<size_t>(moved);
  }
}

}  // namespace

void cma_read(pid_t pid, const void* remote, void* local, size_t bytes) {
  transfer_all(
      [&](size_t done) {
        struct iovec mine = {static_cast<char*>(local) + done, bytes - done};
        struct iovec theirs = {const_cast<char*>(static_cast<const char*>(remote)) + done, bytes - done};
        return ::process_vm_readv(pid, &mine, 1, &theirs, 1, 0);
      },
      pid, "process_vm_readv", bytes);
}

void cma_write(pid_t pid, void* remote, const void* local, size_t bytes) {
  transfer_all(
      [&](size_t done) {
        struct iovec mine = {const_cast<char*>(static_cast<const char*>(local)) + done, bytes - done};
        struct iovec theirs = {static_cast<char*>(remote) + done, bytes - done};
        return ::process_vm_writev(pid, &mine, 1, &theirs, 1, 0);
      },
      pid, "process_vm_writev", bytes);
}

bool cma_probe(pid_t pid, const void* remote, const void* expected, size_t bytes) {
  std::vector<char> copy(bytes);
  try {
    cma_read(pid, remote, copy.data(), bytes);
  } catch (const Error&) {
    return false;
  }
  return std::memcmp(copy.data(), expected, bytes) == 0;
}

}  // namespace matexcomm
