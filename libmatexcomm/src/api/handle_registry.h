// handle_registry.h - the one registry behind every C handle: communicators,
// engines and point-to-point requests.
//
// A handle is a serial number, never reused, cast to the handle's opaque
// pointer type. The registry maps the live ones to what they stand for and
// remembers how many it ever handed out, so that a handle that was released,
// one never handed out, and a garbage pointer are each told apart from a live
// one (and from each other) and never dereferenced: a stale copy of a
// released handle can never alias a newer object. The registry holds shared
// ownership, so an object released on one thread while another still uses it
// lives until that use returns.
// Cost: one uncontended mutex and one hash lookup per use.
// Preconditions: none; every member is safe on any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <utility>

namespace matexcomm::capi {

template <class Handle, class Object>
class HandleRegistry {
 public:
  // The process's registry of this kind. Never destroyed: handles stay
  // checkable until the process ends, and requests never freed are not
  // cancelled after MPI_Finalize.
  static HandleRegistry& instance() {
    static auto* registry = new HandleRegistry;
    return *registry;
  }

  enum class State { kLive, kReleased, kUnknown };

  // Hands out a new handle for `object`.
  Handle add(std::shared_ptr<Object> object) {
    std::lock_guard<std::mutex> lock(mutex_);
    const uintptr_t serial = next_serial_++;
    live_.emplace(serial, std::move(object));
    return reinterpret_cast<Handle>(serial);
  }

  // The object behind a live handle, else null with `state` saying why.
  std::shared_ptr<Object> find(Handle handle, State* state = nullptr) const {
    const uintptr_t serial = reinterpret_cast<uintptr_t>(handle);
    std::lock_guard<std::mutex> lock(mutex_);
    auto found = live_.find(serial);
    if (found != live_.end()) {
      if (state != nullptr) *state = State::kLive;
      return found->second;
    }
    if (state != nullptr) *state = serial >= kFirstSerial && serial < next_serial_ ? State::kReleased : State::kUnknown;
    return nullptr;
  }

  // Ends a live handle and gives back its object (null if it was not live):
  // from now on find() says kReleased.
  std::shared_ptr<Object> release(Handle handle) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto found = live_.find(reinterpret_cast<uintptr_t>(handle));
    if (found == live_.end()) return nullptr;
    std::shared_ptr<Object> object = std::move(found->second);
    live_.erase(found);
    return object;
  }

 private:
  HandleRegistry() = default;
  mutable std::mutex mutex_;
  std::unordered_map<uintptr_t, std::shared_ptr<Object>> live_;
  // Serials start far from small integers, so that neither 0 nor a small
  // number a caller made up by mistake is ever a live handle.
  static constexpr uintptr_t kFirstSerial = uintptr_t{1} << 20;
  uintptr_t next_serial_ = kFirstSerial;
};

}  // namespace matexcomm::capi
