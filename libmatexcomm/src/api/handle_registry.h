// handle_registry.h - the one registry behind every C handle: communicators,
// engines and point-to-point requests.
//
// A handle is a serial number, never reused, with the registry's kind in its
// low bits, cast to the handle's opaque pointer type. The registry maps the
// live ones to what they stand for and remembers how many it ever handed
// out, so that a handle that was released, one never handed out, one of
// another kind and a garbage pointer are each told apart from a live one and
// never dereferenced: a stale copy of a released handle can never alias a
// newer object, nor an engine's a communicator. The registry holds shared
// ownership: an object released on one thread while another holds what
// find() returned lives until that holder lets go (the C API's communicator
// and engine lookups hold it only for the lookup, as before: finalizing while
// another thread calls is the caller's error).
// Cost: one uncontended mutex and one hash lookup per use.
// Preconditions: none; every member is safe on any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <utility>

namespace matexcomm::capi {

// `Kind` (1 to 7) is the registry's own: communicators, engines and
// point-to-point requests each have one.
template <class Handle, class Object, unsigned Kind>
class HandleRegistry {
  static_assert(Kind >= 1 && Kind <= 7, "a kind fits the handle's low three bits");


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
    return reinterpret_cast<Handle>(serial << kKindBits | Kind);
  }

  // The object behind a live handle, else null with `state` saying why.
  std::shared_ptr<Object> find(Handle handle, State* state = nullptr) const {
    std::shared_ptr<Object> object;
    lookup(handle, state, [&](const std::shared_ptr<Object>& live) { object = live; });
    return object;
  }
  // The same without taking a share of ownership (no reference count to
  // touch, on every collective's path): for callers that use the object only
  // while its handle is live anyway.
  Object* find_unowned(Handle handle, State* state = nullptr) const {
    Object* object = nullptr;
    lookup(handle, state, [&](const std::shared_ptr<Object>& live) { object = live.get(); });
    return object;
  }

  // Ends a live handle and gives back its object (null if it was not live):
  // from now on find() says kReleased.
  std::shared_ptr<Object> release(Handle handle) {
    const uintptr_t bits = reinterpret_cast<uintptr_t>(handle);
    if ((bits & kKindMask) != Kind) return nullptr;
    std::lock_guard<std::mutex> lock(mutex_);
    auto found = live_.find(bits >> kKindBits);
    if (found == live_.end()) return nullptr;
    std::shared_ptr<Object> object = std::move(found->second);
    live_.erase(found);
    return object;
  }

 private:
  template <class Found>
  void lookup(Handle handle, State* state, Found found) const {
    const uintptr_t bits = reinterpret_cast<uintptr_t>(handle);
    if ((bits & kKindMask) != Kind) {  // another kind's, NULL, or garbage
      if (state != nullptr) *state = State::kUnknown;
      return;
    }
    const uintptr_t serial = bits >> kKindBits;
    std::lock_guard<std::mutex> lock(mutex_);
    auto entry = live_.find(serial);
    if (entry != live_.end()) {
      if (state != nullptr) *state = State::kLive;
      found(entry->second);
      return;
    }
    if (state != nullptr) *state = serial >= kFirstSerial && serial < next_serial_ ? State::kReleased : State::kUnknown;
  }

  static constexpr unsigned kKindBits = 3;
  static constexpr uintptr_t kKindMask = (uintptr_t{1} << kKindBits) - 1;
  HandleRegistry() = default;
  mutable std::mutex mutex_;
  std::unordered_map<uintptr_t, std::shared_ptr<Object>> live_;
  // Serials start far from small integers, so that neither 0 nor a small
  // number a caller made up by mistake is ever a live handle.
  static constexpr uintptr_t kFirstSerial = uintptr_t{1} << 20;
  uintptr_t next_serial_ = kFirstSerial;
};

}  // namespace matexcomm::capi
