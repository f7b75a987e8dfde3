#include "runtime/controller/finalizer.h"

namespace myop::runtime {
namespace {

std::vector<std::string> finalizers_of(const kube::Object& object) {
  std::vector<std::string> finalizers;
  for (std::string_view finalizer : object.view().finalizers()) finalizers.emplace_back(finalizer);
  return finalizers;
}

}  // namespace

ReconcileResult reconcile_with_finalizer(const ObjectPointer& object, std::string_view finalizer,
                                         const SetFinalizers& set_finalizers, const FinalizerSteps& steps) {
  const kube::ObjectView view = object->view();
  const std::string name(finalizer);
  if (view.is_being_deleted()) {
    if (!view.has_finalizer(finalizer)) return ReconcileResult::done();
    const DependentsPolicy policy =
        view.has_finalizer(kOrphanDependentsFinalizer) ? DependentsPolicy::keep : DependentsPolicy::remove;
    ReconcileResult cleaned = steps.cleanup(object, policy);
    if (cleaned.kind() != ReconcileResult::Kind::done) return cleaned;
    std::vector<std::string> remaining = finalizers_of(*object);
    std::erase(remaining, name);
    auto removed = set_finalizers(*object, remaining);
    if (!removed && !kube::is_not_found(removed.error())) {
      return ReconcileResult::error(std::move(removed).error(), "removing finalizer " + name);
    }
    return ReconcileResult::done();
  }
  if (view.has_finalizer(finalizer)) return steps.apply(object);
  std::vector<std::string> finalizers = finalizers_of(*object);
  finalizers.push_back(name);
  auto added = set_finalizers(*object, finalizers);
  if (!added) return ReconcileResult::error(std::move(added).error(), "adding finalizer " + name);
  return steps.apply(added.value());
}

}  // namespace myop::runtime
