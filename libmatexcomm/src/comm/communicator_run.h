// communicator_run.h - Communicator::run_collective, shared by the files that
// implement the communicator's collectives (communicator*.cc). Internal.
#pragma once

#include <algorithm>
#include <exception>

#include "comm/communicator.h"
#include "core/error.h"
#include "core/logging.h"

namespace matexcomm {

inline bool Communicator::call_check_due(bool compared_inside_node) const {
  return !in_collective_ && layout_.world_size > 1 && check_calls_ != CallCheck::kOff &&
         (check_calls_ == CallCheck::kOn || (!calls_agreed_ && (layout_.node_count > 1 || !compared_inside_node)));
}

inline CallCheckComms Communicator::call_check_comms() const {
  return {world_.get(), &layout_, stall_warning_seconds_, check_pace_};
}

template <class Body>
void Communicator::run_collective(const CallSignature& call, Body&& body, bool compared_inside_node,
                                  bool body_checks) {
  if (!failure_.empty()) {
    MATEX_RAISE(MATEX_ERR_COMM_FAILED, "this communicator failed earlier (" + failure_ +
                                           "); finalize it and create a new one");
  }
  ++sequence_;
  // Calls made by another collective's body (the staged GPU path's host
  // steps) were agreed on with it.
  const bool check = !body_checks && call_check_due(compared_inside_node);
  struct Running {
    bool& flag;
    bool before;
    ~Running() { flag = before; }
  } running{in_collective_, in_collective_};
  in_collective_ = true;
  // The outermost call only: a nested one is part of it.
  CollectiveWatchdog::Watch watch = watchdog_ && !running.before ? CollectiveWatchdog::Watch(watchdog_.get(), call, sequence_)
                                                                 : CollectiveWatchdog::Watch();
  try {
    if (check) agree_call(call_check_comms(), sequence_, call);
    body();
  } catch (const Error& error) {
    if (error.status() == MATEX_ERR_MISMATCH && shm_) {
      sequence_ = std::max(sequence_, shm_->highest_sequence_seen());  // resume in step
    }
    bool recoverable = error.status() == MATEX_ERR_MISMATCH || error.status() == MATEX_ERR_INVALID_ARG ||
                       error.status() == MATEX_ERR_UNSUPPORTED;
    if (!recoverable) {
      failure_ = error.message();
      if (shm_) shm_->abandon();
    }
    if (error.status() == MATEX_ERR_TIMEOUT && layout_.node_count > 1) {
      // Ranks on other nodes may be blocked inside MPI waiting for this node;
      // nothing can wake them but ending the job, so end it with the reason.
      MATEX_LOG(LogLevel::kError, error.message() + "; aborting the job, since ranks on other nodes would wait "
                                                    "forever");
      MPI_Abort(world_.get(), 1);
    }
    throw;
  } catch (const std::exception& error) {
    failure_ = error.what();
    if (shm_) shm_->abandon();
    throw;
  }
}

}  // namespace matexcomm
