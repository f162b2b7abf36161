// c_api_support.h - what the extern "C" files share: the exception barrier
// (guarded), the thread-local message behind matex_last_error, and the checked
// lookup of a communicator handle.
#pragma once

#include <memory>
#include <new>
#include <stdexcept>
#include <string>

#include "core/error.h"
#include "core/logging.h"
#include "matexcomm/matexcomm.h"

namespace matexcomm {
class Communicator;
}

namespace matexcomm::capi {

extern thread_local std::string g_last_error;

// Runs body; turns any exception into a status and the thread's last error.
template <class Body>
matex_status_t guarded(Body&& body) noexcept {
  try {
    body();
    return MATEX_SUCCESS;
  } catch (const matexcomm::Error& error) {
    g_last_error = error.message();
    if (matexcomm::log_level() == matexcomm::LogLevel::kDebug && !error.breadcrumb().empty()) {
      g_last_error += " [" + error.breadcrumb() + "]";
    }
    MATEX_LOG(matexcomm::LogLevel::kInfo, g_last_error);
    return error.status();
  } catch (const std::bad_alloc&) {
    g_last_error = "out of memory";
    return MATEX_ERR_SYSTEM;
  } catch (const std::exception& error) {
    g_last_error = std::string("internal error: ") + error.what();
    return MATEX_ERR_INTERNAL;
  } catch (...) {
    g_last_error = "internal error: unknown exception";
    return MATEX_ERR_INTERNAL;
  }
}

// The communicator behind a handle, or MATEX_ERR_NOT_INITIALIZED.
matexcomm::Communicator& live_comm(matex_comm_t comm);
void require_out(const void* pointer, const char* argument);
// Hands out a new handle for a communicator built inside the library.
// `counts_for_mpi`: finalizing the last such handle ends MPI when matex_init
// started it (matex_init's and sub-communicators: yes; matex_init_mpi's: no).
matex_comm_t register_communicator(std::unique_ptr<matexcomm::Communicator> impl, bool counts_for_mpi = true);

}  // namespace matexcomm::capi
