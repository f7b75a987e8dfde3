#pragma once
// Filters applied to events before they become work, like controller-runtime's predicates. A
// predicate returning false drops the event. Deletes always pass the built-ins: a missed delete
// would leave children behind.
#include <functional>
#include <string>
#include <vector>

#include "runtime/cache/object_event.h"

namespace myop::runtime {

using Predicate = std::function<bool(const ObjectEvent&)>;

// Updates pass only when metadata.generation moved (spec changes, not status or metadata writes).
// This is what stops a reconciler's own status writes from triggering it again.
bool generation_changed(const ObjectEvent& event);
// Updates pass only when labels changed.
bool labels_changed(const ObjectEvent& event);
// Updates pass only when annotations changed.
bool annotations_changed(const ObjectEvent& event);
// Updates pass only when resourceVersion moved (drops no-op re-deliveries).
bool resource_version_changed(const ObjectEvent& event);
// Drops periodic resync re-deliveries.
bool not_resync(const ObjectEvent& event);

Predicate any_of(std::vector<Predicate> predicates);
Predicate all_of(std::vector<Predicate> predicates);

bool passes_all(const std::vector<Predicate>& predicates, const ObjectEvent& event);

}  // namespace myop::runtime
