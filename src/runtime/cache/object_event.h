#pragma once
// What an informer tells its subscribers, and the narrow interface the controller watches through.
// The controller depends on this, not on the informer, so it is unit-tested with an in-memory source.
#include <functional>
#include <memory>

#include "kube/object.h"
#include "runtime/clock.h"

namespace myop::runtime {

enum class EventType {
  added,    // appeared (live, or during the initial list when `initial_list` is set)
  updated,  // changed
  deleted,  // gone; `object` is the last state the cache knew
  resync,   // periodic re-delivery of an unchanged object
};

struct ObjectEvent {
  ObjectEvent() = default;
  ObjectEvent(EventType type, std::shared_ptr<const kube::Object> object,
              std::shared_ptr<const kube::Object> old_object = nullptr)
      : type(type), object(std::move(object)), old_object(std::move(old_object)) {}

  EventType type = EventType::added;
  std::shared_ptr<const kube::Object> object;
  std::shared_ptr<const kube::Object> old_object;  // updates only
  bool initial_list = false;
  // When the watch event reached this process (measures event -> reconciled latency).
  TimePoint seen{};
};

using EventHandler = std::function<void(const ObjectEvent&)>;

class EventSource {
 public:
  virtual ~EventSource() = default;
  // Handlers are called on the source's own thread, in order; they must not block.
  virtual void subscribe(EventHandler handler) = 0;
  // True once the initial list has been delivered.
  virtual bool has_synced() const = 0;
};

}  // namespace myop::runtime
