// backend_p2p.cc - send, recv and recvAnysource: posted at once on the
// caller's thread through libmatexcomm's point-to-point calls (their own MPI
// communicator, safe beside the group's collectives), completed by the
// group's progress thread.
#include <c10/util/Exception.h>

#include "backend.h"
#include "dense_buffer.h"
#include "tensor_types.h"

namespace matex_torch {

c10::intrusive_ptr<c10d::Work> MatexBackend::post_p2p(c10d::OpType type, std::vector<at::Tensor>& tensors, int peer,
                                                      int tag) {
  const bool sending = type == c10d::OpType::SEND;
  const char* what = sending ? "send" : "recv";
  TORCH_CHECK(tensors.size() == 1, "matex: ", what, " takes one tensor, got ", tensors.size());
  std::shared_lock<std::shared_mutex> gate(state_->gate);
  require_usable();
  DenseBuffer buffer(tensors[0], what, /*device_ok=*/false);
  const Movement movement = movement_of(tensors[0].scalar_type());
  const size_t count = buffer.numel() * movement.per_element;
  const Description description =
      describe(std::string(what) + (sending ? " to rank " : peer == MATEX_ANY_SOURCE ? " from any rank"
                                                                                       : " from rank ") +
               (peer == MATEX_ANY_SOURCE ? std::string() : std::to_string(peer)) + " with tag " + std::to_string(tag));
  // torch's analyzer reads the peers from the name: "send 0->1", "recv 1<-0", "recv 1<-?".
  const std::string other = peer == MATEX_ANY_SOURCE ? std::string("?") : std::to_string(peer);
  FlightEntry flight = flight_.record(*this, std::string(what) + " " + std::to_string(rank_) +
                                                 (sending ? "->" : "<-") + other,
                                      description.sequence, sending ? tensors : std::vector<at::Tensor>{},
                                      sending ? std::vector<at::Tensor>{} : tensors, timeout_, /*p2p=*/true);
  matex_p2p_t request = nullptr;
  const matex_status_t status =
      sending ? matex_isend(comm_, buffer.data(), count, movement.dtype, peer, tag, &request)
              : matex_irecv(comm_, buffer.data(), count, movement.dtype, peer, tag, &request);
  check_status(status, description.text());
  flight.started();
  auto completion = std::make_shared<Completion>(tensors);
  // The callback holds the buffer (a send's contiguous copy too) until MPI is done with it.
  p2p_->watch(request, completion, description.text(), [buffer, sending, flight]() mutable {
    if (!sending) buffer.write_back();
    flight.completed();
  });
  return c10::make_intrusive<MatexWork>(rank_, type, completion, timeout_, description, nullptr);
}

c10::intrusive_ptr<c10d::Work> MatexBackend::send(std::vector<at::Tensor>& tensors, int dst_rank, int tag) {
  return post_p2p(c10d::OpType::SEND, tensors, dst_rank, tag);
}

c10::intrusive_ptr<c10d::Work> MatexBackend::recv(std::vector<at::Tensor>& tensors, int src_rank, int tag) {
  return post_p2p(c10d::OpType::RECV, tensors, src_rank, tag);
}

c10::intrusive_ptr<c10d::Work> MatexBackend::recvAnysource(std::vector<at::Tensor>& tensors, int tag) {
  return post_p2p(c10d::OpType::RECVANYSOURCE, tensors, MATEX_ANY_SOURCE, tag);
}

}  // namespace matex_torch
