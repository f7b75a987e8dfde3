#pragma once
// Test double of runtime::EventSource: the test emits events by hand.
#include <atomic>
#include <mutex>
#include <vector>

#include "runtime/cache/object_event.h"

namespace myop::testing {

class InMemoryEventSource final : public runtime::EventSource {
 public:
  void subscribe(runtime::EventHandler handler) override {
    std::lock_guard lock(mutex_);
    handlers_.push_back(std::move(handler));
  }
  bool has_synced() const override { return synced_; }
  void set_synced(bool synced) { synced_ = synced; }

  void emit(const runtime::ObjectEvent& event) {
    std::lock_guard lock(mutex_);
    for (auto& handler : handlers_) handler(event);
  }

 private:
  std::mutex mutex_;
  std::vector<runtime::EventHandler> handlers_;
  std::atomic<bool> synced_{true};
};

}  // namespace myop::testing
