#include "runtime/controller/event_handler.h"

namespace myop::runtime {

namespace {

bool is_background(const ObjectEvent& event) { return event.initial_list || event.type == EventType::resync; }

}  // namespace

ObjectKey key_of(const kube::Object& object) {
  return {std::string(object.namespace_name()), std::string(object.name())};
}

std::string group_of(std::string_view api_version) {
  const auto slash = api_version.find('/');
  return slash == std::string_view::npos ? std::string() : std::string(api_version.substr(0, slash));
}

EventMapper enqueue_object() {
  return [](const ObjectEvent& event) -> std::vector<EnqueueRequest> {
    if (!event.object) return {};
    return {{key_of(*event.object), is_background(event) ? Priority::low : Priority::high}};
  };
}

EventMapper enqueue_controller_owner(std::string owner_group, std::string owner_kind, bool owner_namespaced) {
  return [owner_group = std::move(owner_group), owner_kind = std::move(owner_kind),
          owner_namespaced](const ObjectEvent& event) -> std::vector<EnqueueRequest> {
    Priority priority = Priority::normal;
    if (is_background(event)) priority = Priority::low;
    // A deleted child must be put back promptly.
    if (event.type == EventType::deleted) priority = Priority::high;
    std::vector<EnqueueRequest> requests;
    // On an update that moved the child to another owner, both owners must hear of it.
    for (const auto* object : {event.object.get(), event.old_object.get()}) {
      if (!object) continue;
      auto owner = object->view().controller_owner();
      if (!owner || owner->kind != owner_kind || group_of(owner->api_version) != owner_group) continue;
      EnqueueRequest request{
          {owner_namespaced ? std::string(object->namespace_name()) : std::string(), owner->name}, priority};
      if (requests.empty() || !(requests.front() == request)) requests.push_back(std::move(request));
    }
    return requests;
  };
}

EventMapper enqueue_mapped(std::function<std::vector<ObjectKey>(const ObjectEvent&)> map, Priority priority) {
  return [map = std::move(map), priority](const ObjectEvent& event) {
    std::vector<EnqueueRequest> requests;
    for (auto& key : map(event))
      requests.push_back({std::move(key), is_background(event) ? Priority::low : priority});
    return requests;
  };
}

}  // namespace myop::runtime
