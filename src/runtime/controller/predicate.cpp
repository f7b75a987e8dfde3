#include "runtime/controller/predicate.h"

#include <algorithm>

namespace myop::runtime {

namespace {

bool is_update_with_both(const ObjectEvent& event) {
  return event.type == EventType::updated && event.object && event.old_object;
}

}  // namespace

bool generation_changed(const ObjectEvent& event) {
  if (!is_update_with_both(event)) return true;
  return event.object->view().generation() != event.old_object->view().generation();
}

bool labels_changed(const ObjectEvent& event) {
  if (!is_update_with_both(event)) return true;
  return event.object->view().labels() != event.old_object->view().labels();
}

bool annotations_changed(const ObjectEvent& event) {
  if (!is_update_with_both(event)) return true;
  return event.object->view().annotations() != event.old_object->view().annotations();
}

bool resource_version_changed(const ObjectEvent& event) {
  if (!is_update_with_both(event)) return true;
  return event.object->resource_version() != event.old_object->resource_version();
}

bool not_resync(const ObjectEvent& event) { return event.type != EventType::resync; }

Predicate any_of(std::vector<Predicate> predicates) {
  return [predicates = std::move(predicates)](const ObjectEvent& event) {
    for (const auto& predicate : predicates) {
      if (predicate(event)) return true;
    }
    return predicates.empty();
  };
}

Predicate all_of(std::vector<Predicate> predicates) {
  return [predicates = std::move(predicates)](const ObjectEvent& event) {
    return passes_all(predicates, event);
  };
}

bool passes_all(const std::vector<Predicate>& predicates, const ObjectEvent& event) {
  return std::ranges::all_of(predicates, [&](const Predicate& predicate) { return predicate(event); });
}

}  // namespace myop::runtime
