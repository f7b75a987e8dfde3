#pragma once
// The finalizer protocol every controller follows the same way (after kube-rs's `finalizer()`):
//
//   object not being deleted:
//     1. our finalizer missing: add it (one merge patch, resourceVersion precondition), then go on
//        with the object the patch returned (its new resourceVersion included);
//     2. apply(object): converge.
//   object being deleted (deletionTimestamp set; a finalizer is never added then):
//     1. our finalizer missing: nothing left to do;
//     2. cleanup(object, policy): remove what the object owns outside the garbage collector's reach,
//        and wait until it is gone. Any result but done is returned as it is (retry, requeue);
//     3. cleanup done: remove our finalizer (same precondition; NotFound means someone else
//        finished the job).
//
// The deletion's propagation policy reaches cleanup: `kubectl delete --cascade=orphan` leaves the
// API server's "orphan" finalizer on the object, which asks that dependents be kept (the garbage
// collector then takes their owner references away); cleanup must not delete them.
#include <functional>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "kube/errors.h"
#include "runtime/cache/cache.h"
#include "runtime/controller/reconciler.h"

namespace myop::runtime {

enum class DependentsPolicy {
  remove,  // the usual deletion: cleanup removes what the object owns
  keep,    // propagationPolicy Orphan: the user keeps the dependents
};

// The one write the protocol makes: replace metadata.finalizers of `object`, on the condition that
// it is still at object's resourceVersion. Returns the stored object.
using SetFinalizers =
    std::function<kube::Result<ObjectPointer>(const kube::Object& object, const std::vector<std::string>&)>;

struct FinalizerSteps {
  std::function<ReconcileResult(const ObjectPointer& object)> apply;
  std::function<ReconcileResult(const ObjectPointer& object, DependentsPolicy policy)> cleanup;
};

// The API server's finalizer for a deletion with propagationPolicy Orphan.
inline constexpr std::string_view kOrphanDependentsFinalizer = "orphan";

ReconcileResult reconcile_with_finalizer(const ObjectPointer& object, std::string_view finalizer,
                                         const SetFinalizers& set_finalizers, const FinalizerSteps& steps);

}  // namespace myop::runtime
