// p2p_progress.h - completes a group's sends and receives. They are posted
// at once on the caller's thread (an isend never blocks, so ring exchanges
// issued one call at a time cannot deadlock); this thread tests the pending
// requests, backing off while nothing moves, and completes their Works.
#pragma once

#include <matexcomm/matexcomm.h>

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "work.h"

namespace matex_torch {

class P2pProgress {
 public:
  P2pProgress() = default;
  // Stops the thread; requests still pending are freed (receives cancelled).
  ~P2pProgress();
  P2pProgress(const P2pProgress&) = delete;
  P2pProgress& operator=(const P2pProgress&) = delete;

  // Takes ownership of `request`. on_success runs on the progress thread
  // after the request completed and before the Completion is marked.
  void watch(matex_p2p_t request, std::shared_ptr<Completion> completion, std::string description,
             std::function<void()> on_success);

 private:
  struct Pending {
    matex_p2p_t request;
    std::shared_ptr<Completion> completion;
    std::string description;
    std::function<void()> on_success;
  };
  void loop();
  // True when it completed (and was freed).
  bool progress(Pending& pending);

  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<Pending> pending_;
  bool stopping_ = false;
  std::thread thread_;  // started by the first watch()
};

}  // namespace matex_torch
