// What the MyResource reconciler needs from the cluster, as one narrow interface: reads from the
// informer caches, the few writes it makes, and events. The reconciler is tested against a fake
// of this interface; kube_cluster.h implements it with the manager's caches and cached writer.
#pragma once

#include <memory>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "kube/errors.h"
#include "kube/object.h"
#include "myresource/features.h"
#include "runtime/controller/event_recorder.h"

namespace myop::myresource {

using ObjectPointer = std::shared_ptr<const kube::Object>;

// The object an event is about: the runtime recorder's own type, so no conversion is needed.
using EventSubject = runtime::EventSubject;

// How a deleted Deployment's ReplicaSets and pods go (DeleteOptions.propagationPolicy).
enum class Propagation {
  foreground,  // the Deployment stays, being deleted, until the garbage collector has removed them
  background,  // the Deployment goes now; the garbage collector removes them after
};

class Cluster {
 public:
  virtual ~Cluster() = default;

  // Reads come from the caches (never from the API server), nullptr when absent.
  virtual ObjectPointer get_myresource(std::string_view namespace_name, std::string_view name) = 0;
  virtual ObjectPointer get_deployment(std::string_view namespace_name, std::string_view name) = 0;

  // The operator-wide feature flags (from the watched ConfigMap) as they are now.
  virtual Features features() = 0;

  // Writes go through the manager's cached writer: each returns the object as stored, which the
  // caches already hold when the call returns (read-your-own-writes), or the API's error unchanged.

  // Server-side apply of a complete desired Deployment with field manager my-operator and force
  // (the operator owns these fields; a hand edit loses them back).
  virtual kube::Result<ObjectPointer> apply_deployment(const kube::Object& desired, std::stop_token stop) = 0;
  // Deletion with a UID precondition (never deletes a same-named successor). The Deployment while a
  // foreground deletion waits for its pods, null once it is gone.
  virtual kube::Result<ObjectPointer> delete_deployment(std::string_view namespace_name,
                                                        std::string_view name, std::string_view uid,
                                                        Propagation propagation, std::stop_token stop) = 0;
  // Replaces metadata.finalizers of `myresource`, on the condition that it is still at its
  // resourceVersion (409 when the object moved on).
  virtual kube::Result<ObjectPointer> set_myresource_finalizers(const kube::Object& myresource,
                                                                const std::vector<std::string>& finalizers,
                                                                std::stop_token stop) = 0;
  // Server-side apply of the status subresource (body from status_apply_body).
  virtual kube::Result<ObjectPointer> apply_myresource_status(const kube::Object& body,
                                                              std::stop_token stop) = 0;

  // type is "Normal" or "Warning"; reason CamelCase; duplicates may be folded by the implementation.
  virtual void record_event(const EventSubject& subject, std::string_view type, std::string_view reason,
                            std::string_view action, std::string_view message) = 0;
};

}  // namespace myop::myresource
