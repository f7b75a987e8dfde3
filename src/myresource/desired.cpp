#include "myresource/desired.h"

#include "myresource/spec_hash.h"

namespace myop::myresource {
namespace {

using kube::JsonAllocator;
using kube::JsonValue;

// Small helpers that copy every string into the Object's pool (no dangling references).
class Builder {
 public:
  explicit Builder(JsonAllocator& allocator) : allocator_(allocator) {}

  JsonValue string(std::string_view text) {
    return JsonValue(text.data(), static_cast<rapidjson::SizeType>(text.size()), allocator_);
  }
  // Members, not static, so every call site reads builder.object() like builder.string().
  // NOLINTNEXTLINE(readability-convert-member-functions-to-static)
  JsonValue object() { return JsonValue(rapidjson::kObjectType); }
  // NOLINTNEXTLINE(readability-convert-member-functions-to-static)
  JsonValue array() { return JsonValue(rapidjson::kArrayType); }

  void add(JsonValue& parent, std::string_view key, JsonValue value) {
    parent.AddMember(string(key), value, allocator_);
  }
  void add(JsonValue& parent, std::string_view key, std::string_view value) {
    add(parent, key, string(value));
  }
  void add(JsonValue& parent, std::string_view key, const char* value) {
    add(parent, key, string(std::string_view(value)));
  }
  void add(JsonValue& parent, std::string_view key, bool value) { add(parent, key, JsonValue(value)); }
  void add(JsonValue& parent, std::string_view key, std::int32_t value) {
    add(parent, key, JsonValue(value));
  }
  void push(JsonValue& array, JsonValue value) { array.PushBack(value, allocator_); }

  template <typename Map>
  JsonValue string_map(const Map& map) {
    JsonValue result = object();
    for (const auto& [key, value] : map) add(result, key, std::string_view(value));
    return result;
  }

 private:
  JsonAllocator& allocator_;
};

// The restricted Pod Security Standard, at pod and container level.
JsonValue pod_security_context(Builder& builder) {
  JsonValue context = builder.object();
  builder.add(context, "runAsNonRoot", true);
  JsonValue seccomp = builder.object();
  builder.add(seccomp, "type", "RuntimeDefault");
  builder.add(context, "seccompProfile", std::move(seccomp));
  return context;
}

JsonValue container_security_context(Builder& builder) {
  JsonValue context = builder.object();
  builder.add(context, "runAsNonRoot", true);
  builder.add(context, "allowPrivilegeEscalation", false);
  JsonValue capabilities = builder.object();
  JsonValue drop = builder.array();
  builder.push(drop, builder.string("ALL"));
  builder.add(capabilities, "drop", std::move(drop));
  builder.add(context, "capabilities", std::move(capabilities));
  JsonValue seccomp = builder.object();
  builder.add(seccomp, "type", "RuntimeDefault");
  builder.add(context, "seccompProfile", std::move(seccomp));
  return context;
}

JsonValue container(Builder& builder, const Spec& spec, std::string_view image) {
  JsonValue result = builder.object();
  builder.add(result, "name", kContainerName);
  builder.add(result, "image", image);
  if (spec.port) {
    JsonValue ports = builder.array();
    JsonValue port = builder.object();
    builder.add(port, "containerPort", *spec.port);
    builder.add(port, "protocol", "TCP");
    builder.push(ports, std::move(port));
    builder.add(result, "ports", std::move(ports));
  }
  if (!spec.env.empty()) {
    JsonValue env = builder.array();
    for (const EnvVar& variable : spec.env) {
      JsonValue item = builder.object();
      builder.add(item, "name", std::string_view(variable.name));
      builder.add(item, "value", std::string_view(variable.value));
      builder.push(env, std::move(item));
    }
    builder.add(result, "env", std::move(env));
  }
  if (!spec.resources.requests.empty() || !spec.resources.limits.empty()) {
    JsonValue resources = builder.object();
    if (!spec.resources.requests.empty()) {
      builder.add(resources, "requests", builder.string_map(spec.resources.requests));
    }
    if (!spec.resources.limits.empty())
      builder.add(resources, "limits", builder.string_map(spec.resources.limits));
    builder.add(result, "resources", std::move(resources));
  }
  builder.add(result, "securityContext", container_security_context(builder));
  return result;
}

struct DeploymentShape {
  Track track;
  std::string image;
  std::int32_t replicas;
  std::optional<std::int32_t> progress_deadline_seconds;
  std::map<std::string, std::string> extra_annotations;
};

kube::Object build_deployment(const MyResource& resource, const DeploymentShape& shape) {
  kube::Object deployment(4096);
  Builder builder(deployment.allocator());
  const std::string& name = resource.metadata.name;
  std::map<std::string, std::string> labels = child_labels(name, shape.track);

  JsonValue spec = builder.object();
  builder.add(spec, "replicas", shape.replicas);
  if (shape.progress_deadline_seconds) {
    builder.add(spec, "progressDeadlineSeconds", *shape.progress_deadline_seconds);
  }
  JsonValue selector = builder.object();
  builder.add(selector, "matchLabels", builder.string_map(child_selector(name, shape.track)));
  builder.add(spec, "selector", std::move(selector));
  JsonValue template_value = builder.object();
  JsonValue template_metadata = builder.object();
  builder.add(template_metadata, "labels", builder.string_map(labels));
  builder.add(template_value, "metadata", std::move(template_metadata));
  JsonValue pod_spec = builder.object();
  // Only when the MyResource sets it: an absent field must not change the hash of existing objects.
  if (resource.spec.automount_service_account_token) {
    builder.add(pod_spec, "automountServiceAccountToken", *resource.spec.automount_service_account_token);
  }
  builder.add(pod_spec, "securityContext", pod_security_context(builder));
  JsonValue containers = builder.array();
  builder.push(containers, container(builder, resource.spec, shape.image));
  builder.add(pod_spec, "containers", std::move(containers));
  builder.add(template_value, "spec", std::move(pod_spec));
  builder.add(spec, "template", std::move(template_value));

  std::map<std::string, std::string> annotations = shape.extra_annotations;
  annotations[std::string(kSpecHashAnnotation)] = spec_hash(spec);
  annotations[std::string(kObservedGenerationAnnotation)] = std::to_string(resource.metadata.generation);

  JsonValue metadata = builder.object();
  builder.add(metadata, "name", std::string_view(deployment_name(name, shape.track)));
  builder.add(metadata, "namespace", std::string_view(resource.metadata.namespace_name));
  builder.add(metadata, "labels", builder.string_map(labels));
  builder.add(metadata, "annotations", builder.string_map(annotations));
  JsonValue owner = builder.object();
  builder.add(owner, "apiVersion", kApiVersion);
  builder.add(owner, "kind", kKind);
  builder.add(owner, "name", std::string_view(name));
  builder.add(owner, "uid", std::string_view(resource.metadata.uid));
  builder.add(owner, "controller", true);
  builder.add(owner, "blockOwnerDeletion", true);
  JsonValue owners = builder.array();
  builder.push(owners, std::move(owner));
  builder.add(metadata, "ownerReferences", std::move(owners));

  JsonValue& root = deployment.json();
  builder.add(root, "apiVersion", "apps/v1");
  builder.add(root, "kind", "Deployment");
  builder.add(root, "metadata", std::move(metadata));
  builder.add(root, "spec", std::move(spec));
  return deployment;
}

}  // namespace

std::string_view to_string(Track track) { return track == Track::Stable ? "stable" : "canary"; }

std::string deployment_name(std::string_view myresource_name, Track track) {
  std::string name(myresource_name);
  if (track == Track::Canary) name += kCanarySuffix;
  return name;
}

std::map<std::string, std::string> child_labels(std::string_view myresource_name, Track track) {
  std::map<std::string, std::string> labels = child_selector(myresource_name, track);
  labels[std::string(kManagedByLabel)] = std::string(kManagedByValue);
  return labels;
}

std::map<std::string, std::string> child_selector(std::string_view myresource_name, Track track) {
  return {
      {std::string(kNameLabel), std::string(myresource_name)},
      {std::string(kMyResourceLabel), std::string(myresource_name)},
      {std::string(kTrackLabel), std::string(to_string(track))},
  };
}

kube::Object desired_stable_deployment(const MyResource& resource) {
  return build_deployment(resource, {Track::Stable,
                                     resource.spec.image,
                                     resource.spec.replicas,
                                     resource.spec.progress_deadline_seconds,
                                     {}});
}

kube::Object desired_canary_deployment(const MyResource& resource, const CanaryDeploymentPlan& plan) {
  std::map<std::string, std::string> annotations;
  if (!plan.started_at.empty()) annotations[std::string(kCanaryStartedAtAnnotation)] = plan.started_at;
  // The Deployment's own deadline mirrors ours, so `kubectl rollout status` tells the same story.
  return build_deployment(resource, {Track::Canary, plan.image, plan.replicas,
                                     resource.spec.canary.progress_deadline_seconds, std::move(annotations)});
}

}  // namespace myop::myresource
