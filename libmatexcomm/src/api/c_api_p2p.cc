// c_api_p2p.cc - the extern "C" point-to-point entry points.
//
// A matex_p2p_t is a handle of the registry of live requests
// (api/handle_registry.h): a freed or garbage handle is reported as
// MATEX_ERR_NOT_INITIALIZED, and can never alias a newer request; a request
// freed on one thread while another still tests it stays alive until that
// test returns.
#include <cstdint>
#include <memory>
#include <mutex>

#include "api/c_api_support.h"
#include "api/handle_registry.h"
#include "comm/communicator.h"
#include "comm/p2p_request.h"
#include "matexcomm/matexcomm.h"

using matexcomm::P2pRequest;
using matexcomm::capi::guarded;
using matexcomm::capi::live_comm;
using matexcomm::capi::require_out;

namespace {

using P2pRegistry = matexcomm::capi::HandleRegistry<matex_p2p_t, P2pRequest, 3>;

matex_p2p_t hand_out(std::unique_ptr<P2pRequest> request) {
  return P2pRegistry::instance().add(std::shared_ptr<P2pRequest>(std::move(request)));
}

std::shared_ptr<P2pRequest> live_request(matex_p2p_t handle) {
  MATEX_REQUIRE(handle != nullptr, MATEX_ERR_NOT_INITIALIZED, "request is NULL");
  std::shared_ptr<P2pRequest> found = P2pRegistry::instance().find(handle);
  MATEX_REQUIRE(found != nullptr, MATEX_ERR_NOT_INITIALIZED,
                "request is not a live point-to-point request (already freed, or never returned by matex_isend or "
                "matex_irecv)");
  return found;
}

std::shared_ptr<P2pRequest> take_request(matex_p2p_t handle) {
  live_request(handle);  // says why a handle is not live
  std::shared_ptr<P2pRequest> taken = P2pRegistry::instance().release(handle);
  MATEX_REQUIRE(taken != nullptr, MATEX_ERR_NOT_INITIALIZED, "request was freed by another thread meanwhile");
  return taken;
}

}  // namespace

extern "C" {

matex_status_t matex_isend(matex_comm_t comm, const void* buf, size_t count, matex_dtype_t dtype, int dest, int tag,
                           matex_p2p_t* request) {
  return guarded([&] {
    require_out(request, "request");
    *request = nullptr;
    *request = hand_out(live_comm(comm).isend(buf, count, dtype, dest, tag));
  });
}

matex_status_t matex_irecv(matex_comm_t comm, void* buf, size_t count, matex_dtype_t dtype, int source, int tag,
                           matex_p2p_t* request) {
  return guarded([&] {
    require_out(request, "request");
    *request = nullptr;
    *request = hand_out(live_comm(comm).irecv(buf, count, dtype, source, tag));
  });
}

matex_status_t matex_p2p_test(matex_p2p_t request, int* done) {
  return guarded([&] {
    require_out(done, "done");
    *done = 0;
    std::shared_ptr<P2pRequest> held = live_request(request);
    *done = 1;  // a failure below is a completed request too
    *done = held->test() ? 1 : 0;
  });
}

matex_status_t matex_p2p_wait(matex_p2p_t request, double timeout_seconds) {
  return guarded([&] { live_request(request)->wait(timeout_seconds); });
}

matex_status_t matex_p2p_status(matex_p2p_t request, int* source, size_t* count) {
  return guarded([&] {
    require_out(source, "source");
    require_out(count, "count");
    std::shared_ptr<P2pRequest> held = live_request(request);
    *source = held->source();
    *count = held->received_count();
  });
}

matex_status_t matex_p2p_free(matex_p2p_t* request) {
  return guarded([&] {
    require_out(request, "request");
    if (*request == nullptr) return;  // like free(NULL)
    std::shared_ptr<P2pRequest> owned = take_request(*request);
    *request = nullptr;
    owned.reset();  // cancels a pending receive unless another thread still holds it
  });
}

matex_status_t matex_send(matex_comm_t comm, const void* buf, size_t count, matex_dtype_t dtype, int dest, int tag,
                          double timeout_seconds) {
  return guarded([&] { live_comm(comm).isend(buf, count, dtype, dest, tag)->wait(timeout_seconds); });
}

matex_status_t matex_recv(matex_comm_t comm, void* buf, size_t count, matex_dtype_t dtype, int source, int tag,
                          double timeout_seconds, int* source_out) {
  return guarded([&] {
    std::unique_ptr<P2pRequest> pending = live_comm(comm).irecv(buf, count, dtype, source, tag);
    pending->wait(timeout_seconds);
    if (source_out != nullptr) *source_out = pending->source();
  });
}

}  // extern "C"
