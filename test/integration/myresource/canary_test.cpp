// The canary life cycle (docs/design.md "Canary") with the real operator binary on the real control
// plane: start, promotion, removal, the automatic abort of a canary that never becomes Available
// within spec.canary.progressDeadlineSeconds, and the canary annotations written by `kubectl annotate`
// without a version (v1beta1; docs/versioning.md "Canary annotations on every version").
#include <catch2/catch.hpp>

#include <sstream>

#include "myresource/operator_process.h"
#include "support/testenv.h"

using namespace myop;
using namespace myop::testing;
using namespace std::chrono_literals;

namespace {

std::string container_image(const std::string& namespace_, const std::string& name) {
  return jsonpath("deployment", namespace_, name, "{.spec.template.spec.containers[0].image}");
}

// Marks every node unschedulable for the guard's lifetime, as a full or drained cluster is: pods
// that run stay, new pods stay Pending, so a new Deployment never becomes Available.
class CordonedNodes {
 public:
  CordonedNodes() {
    nodes_ = testenv::kubectl_or_fail("get nodes -o jsonpath='{.items[*].metadata.name}'");
    if (auto newline = nodes_.rfind('\n'); newline != std::string::npos) nodes_ = nodes_.substr(newline + 1);
    REQUIRE_FALSE(nodes_.empty());
    testenv::kubectl_or_fail("cordon " + nodes_);
  }
  ~CordonedNodes() { testenv::kubectl("uncordon " + nodes_); }
  CordonedNodes(const CordonedNodes&) = delete;
  CordonedNodes& operator=(const CordonedNodes&) = delete;

 private:
  std::string nodes_;
};

}  // namespace

TEST_CASE("a canary starts next to the stable Deployment, then is promoted or removed",
          "[myresource][operator][canary]") {
  if (!testenv::owns_control_plane()) FAIL("needs the ctest fixture's control plane and its audit log");
  testenv::ScopedNamespace ns("mr-canary");
  OperatorProcess operator_process(
      {.user = "myop-canary", .namespaces = {ns.name()}, .pod_namespace = ns.name(), .extra_args = {}});
  operator_process.start();

  const std::size_t start_mark = audit_mark();
  testenv::kubectl_apply(myresource_manifest(ns.name(), "shop", "nginx:1.27.1", 2,
                                             "  canary:\n    replicas: 1\n", canary_annotations("1.28.0")));

  // Start: "<name>-canary" with the target tag and the canary labels, owned by the MyResource.
  REQUIRE(eventually([&] { return deployment_rolled(ns.name(), "shop-canary", "nginx:1.28.0"); }, 120s));
  REQUIRE(eventually([&] { return deployment_rolled(ns.name(), "shop", "nginx:1.27.1"); }, 60s));
  const std::string uid = jsonpath("myresource", ns.name(), "shop", "{.metadata.uid}");
  CHECK(jsonpath("deployment", ns.name(), "shop-canary",
                 "{.metadata.labels.myorg\\.io/track} {.metadata.labels.myorg\\.io/myresource} "
                 "{.metadata.labels.app\\.kubernetes\\.io/managed-by} {.spec.replicas} "
                 "{.spec.template.metadata.labels.myorg\\.io/track}") == "canary shop my-operator 1 canary");
  CHECK(jsonpath("deployment", ns.name(), "shop-canary",
                 "{.metadata.ownerReferences[0].kind} {.metadata.ownerReferences[0].uid} "
                 "{.metadata.ownerReferences[0].controller}") == "MyResource " + uid + " true");
  CHECK(jsonpath("deployment", ns.name(), "shop", "{.metadata.labels.myorg\\.io/track}") == "stable");
  REQUIRE(eventually([&] { return condition_reason(ns.name(), "shop", "Canary") == "CanaryRunning"; }, 60s));
  CHECK(condition_status(ns.name(), "shop", "Canary") == "True");
  CHECK(jsonpath("myresource", ns.name(), "shop", "{.status.canaryImage}") == "nginx:1.28.0");
  CHECK(
      eventually([&] { return has_event(ns.name(), "MyResource", "shop", "Normal", "CanaryRunning"); }, 30s));
  // Once the canary is Available the condition says so.
  CHECK(eventually(
      [&] {
        return jsonpath("myresource", ns.name(), "shop",
                        "{.status.conditions[?(@.type==\"Canary\")].message}")
                   .find("(1/1 available)") != std::string::npos;
      },
      60s));
  // Creating the canary is the operator's write (and no one else's): the audit log says so.
  const auto created = deployment_writes(operator_process.user(), start_mark, "shop-canary");
  INFO("operator writes of shop-canary:\n" << describe(created));
  CHECK_FALSE(created.empty());

  SECTION("promotion: spec.image set to the target rolls the stable Deployment and removes the canary") {
    const std::size_t mark = audit_mark();
    testenv::kubectl_or_fail("patch myresource shop -n " + ns.name() +
                             " --type merge -p '{\"spec\":{\"image\":\"nginx:1.28.0\"}}'");
    REQUIRE(eventually([&] { return deployment_rolled(ns.name(), "shop", "nginx:1.28.0"); }, 120s));
    REQUIRE(eventually([&] { return deployment_gone(ns.name(), "shop-canary"); }, 60s));
    REQUIRE(
        eventually([&] { return condition_reason(ns.name(), "shop", "Canary") == "CanaryPromoted"; }, 60s));
    CHECK(condition_status(ns.name(), "shop", "Canary") == "False");
    CHECK(eventually([&] { return myresource_ready(ns.name(), "shop"); }, 60s));
    CHECK(eventually([&] { return has_event(ns.name(), "MyResource", "shop", "Normal", "CanaryPromoted"); },
                     30s));
    const auto deletes = deployment_writes(operator_process.user(), mark, "shop-canary");
    INFO("operator writes of shop-canary after the promotion:\n" << describe(deletes));
    REQUIRE(deletes.size() >= 1);
    CHECK(deletes.front().verb == "delete");
    // The canary stays gone: a promoted canary is not started again, though the operator has done
    // all it was going to do about the promotion.
    operator_process.wait_until_settled();
    CHECK(deployment_gone(ns.name(), "shop-canary"));
  }

  SECTION("removal: removing the annotations deletes the canary and its condition") {
    const std::string stable_generation = jsonpath("deployment", ns.name(), "shop", "{.metadata.generation}");
    testenv::kubectl_or_fail("annotate myresources.v1alpha1.myorg.io shop -n " + ns.name() +
                             " myorg.io/canary- myorg.io/targetVersion-");
    REQUIRE(eventually([&] { return deployment_gone(ns.name(), "shop-canary"); }, 60s));
    REQUIRE(eventually(
        [&] {
          return jsonpath("myresource", ns.name(), "shop", "{.status.conditions[*].type}").find("Canary") ==
                 std::string::npos;
        },
        60s));
    CHECK(jsonpath("myresource", ns.name(), "shop", "{.status.canaryImage}").empty());
    CHECK(eventually([&] { return has_event(ns.name(), "MyResource", "shop", "Normal", "CanaryRemoved"); },
                     30s));
    // The stable Deployment is not touched by the removal.
    CHECK(jsonpath("deployment", ns.name(), "shop", "{.metadata.generation}") == stable_generation);
    CHECK(container_image(ns.name(), "shop") == "nginx:1.27.1");
    CHECK(myresource_ready(ns.name(), "shop"));
  }
  CHECK(operator_process.running());
}

TEST_CASE(
    "a canary that is not Available within progressDeadlineSeconds is scaled away, the stable "
    "Deployment is untouched",
    "[myresource][operator][canary]") {
  if (!testenv::owns_control_plane()) FAIL("needs the ctest fixture's control plane and its audit log");
  testenv::ScopedNamespace ns("mr-canary-abort");
  OperatorProcess operator_process(
      {.user = "myop-canary-abort", .namespaces = {ns.name()}, .pod_namespace = ns.name(), .extra_args = {}});
  operator_process.start();

  const std::string canary_spec = "  canary:\n    replicas: 1\n    progressDeadlineSeconds: 15\n";
  testenv::kubectl_apply(myresource_manifest(ns.name(), "web", "nginx:1.27.1", 2, canary_spec));
  REQUIRE(eventually([&] { return myresource_ready(ns.name(), "web"); }, 120s));
  REQUIRE(eventually([&] { return deployment_rolled(ns.name(), "web", "nginx:1.27.1"); }, 60s));
  operator_process.wait_until_settled();  // trailing status writes of the first rollout

  const std::string stable_fields = "{.metadata.uid} {.metadata.generation} {.metadata.resourceVersion}";
  const std::string stable_before = jsonpath("deployment", ns.name(), "web", stable_fields);
  const std::string template_before = jsonpath("deployment", ns.name(), "web", "{.spec.template}");
  REQUIRE_FALSE(stable_before.empty());
  REQUIRE_FALSE(template_before.empty());

  // No node takes new pods: the stable pods keep running, the canary's stay Pending.
  CordonedNodes cordoned;
  const std::size_t mark = audit_mark();
  testenv::kubectl_or_fail("annotate myresources.v1alpha1.myorg.io web -n " + ns.name() +
                           " myorg.io/canary=true myorg.io/targetVersion=1.28.0");

  REQUIRE(eventually([&] { return condition_reason(ns.name(), "web", "Canary") == "CanaryRunning"; }, 60s));
  CHECK(container_image(ns.name(), "web-canary") == "nginx:1.28.0");
  CHECK(jsonpath("deployment", ns.name(), "web-canary", "{.spec.replicas} {.spec.progressDeadlineSeconds}") ==
        "1 15");
  CHECK(jsonpath("deployment", ns.name(), "web-canary", "{.status.availableReplicas}").empty());

  // The deadline passes: Canary=False/CanaryFailed, a Warning event, the canary scaled to 0 and kept.
  REQUIRE(eventually([&] { return condition_reason(ns.name(), "web", "Canary") == "CanaryFailed"; }, 90s));
  CHECK(condition_status(ns.name(), "web", "Canary") == "False");
  CHECK(jsonpath("myresource", ns.name(), "web", "{.status.conditions[?(@.type==\"Canary\")].message}")
            .find("not Available within 15s") != std::string::npos);
  CHECK(eventually([&] { return jsonpath("deployment", ns.name(), "web-canary", "{.spec.replicas}") == "0"; },
                   30s));
  CHECK(
      eventually([&] { return has_event(ns.name(), "MyResource", "web", "Warning", "CanaryFailed"); }, 30s));
  // It stays failed (not restarted) while the target is unchanged, even once nothing is pending: the
  // operator has settled (the Deployment controller's last status changes of the canary reconciled).
  operator_process.wait_until_settled();
  CHECK(condition_reason(ns.name(), "web", "Canary") == "CanaryFailed");
  CHECK(jsonpath("deployment", ns.name(), "web-canary", "{.spec.replicas}") == "0");
  CHECK(myresource_ready(ns.name(), "web"));

  // The stable Deployment: the same object, generation, resourceVersion and pod template, and the
  // operator wrote only the canary.
  CHECK(jsonpath("deployment", ns.name(), "web", stable_fields) == stable_before);
  CHECK(jsonpath("deployment", ns.name(), "web", "{.spec.template}") == template_before);
  CHECK(container_image(ns.name(), "web") == "nginx:1.27.1");
  const auto writes = audit_writes(operator_process.user(), mark);
  INFO("operator writes during the abort:\n" << describe(writes));
  CHECK(deployment_writes(operator_process.user(), mark, "web").empty());
  CHECK_FALSE(deployment_writes(operator_process.user(), mark, "web-canary").empty());
  CHECK(operator_process.running());
}

namespace {

// A v1beta1 MyResource, as a user writes one today (config/samples), with optional spec.canary lines.
std::string v1beta1_manifest(const std::string& namespace_, const std::string& name,
                             const std::string& canary = "") {
  return "apiVersion: myorg.io/v1beta1\nkind: MyResource\nmetadata:\n  name: " + name +
         "\n  namespace: " + namespace_ + "\nspec:\n  image: nginx:1.27.1\n  replicas: 1\n" + canary;
}

}  // namespace

TEST_CASE("kubectl annotate without a version starts and stops a canary (the annotations on v1beta1)",
          "[myresource][operator][canary]") {
  testenv::ScopedNamespace ns("mr-canary-annotate");
  OperatorProcess operator_process({.user = "myop-canary-annotate",
                                    .namespaces = {ns.name()},
                                    .pod_namespace = ns.name(),
                                    .extra_args = {}});
  operator_process.start();
  testenv::kubectl_apply(v1beta1_manifest(ns.name(), "web"));
  REQUIRE(eventually([&] { return myresource_ready(ns.name(), "web"); }, 120s));

  // As every user types it: no version named, so kubectl writes its preferred version, v1beta1.
  const auto annotated = testenv::kubectl("annotate mr web -n " + ns.name() +
                                          " myorg.io/canary=true myorg.io/targetVersion=1.28.0");
  INFO(annotated.output);
  REQUIRE(annotated.ok());
  const std::string beta = "myresources.v1beta1.myorg.io";
  const std::string alpha = "myresources.v1alpha1.myorg.io";
  CHECK(jsonpath(
            beta, ns.name(), "web",
            "{.metadata.annotations.myorg\\.io/canary} {.metadata.annotations.myorg\\.io/targetVersion}") ==
        "true 1.28.0");
  CHECK(jsonpath(beta, ns.name(), "web", "{.spec.canary}").empty());

  INFO("operator log:\n" << operator_process.log_tail(30));
  REQUIRE(eventually([&] { return deployment_rolled(ns.name(), "web-canary", "nginx:1.28.0"); }, 120s));
  REQUIRE(eventually([&] { return condition_reason(ns.name(), "web", "Canary") == "CanaryRunning"; }, 60s));
  CHECK(container_image(ns.name(), "web") == "nginx:1.27.1");
  // Both versions say the same: read as v1alpha1 the object has the canary it runs.
  CHECK(jsonpath(
            alpha, ns.name(), "web",
            "{.metadata.annotations.myorg\\.io/canary} {.metadata.annotations.myorg\\.io/targetVersion}") ==
        "true 1.28.0");
  CHECK_FALSE(has_event(ns.name(), "MyResource", "web", "Warning", "AnnotationIgnored"));

  // Removing the annotation the same way removes the canary.
  testenv::kubectl_or_fail("annotate mr web -n " + ns.name() + " myorg.io/canary-");
  REQUIRE(eventually([&] { return deployment_gone(ns.name(), "web-canary"); }, 60s));
  CHECK(
      eventually([&] { return has_event(ns.name(), "MyResource", "web", "Normal", "CanaryRemoved"); }, 30s));
  CHECK(jsonpath(alpha, ns.name(), "web", "{.metadata.annotations.myorg\\.io/canary}").empty());
  CHECK(operator_process.running());
}

TEST_CASE(
    "an annotation that spec.canary overrides draws a warning from kubectl and an event from the operator",
    "[myresource][operator][canary]") {
  testenv::ScopedNamespace ns("mr-canary-ignored");
  OperatorProcess operator_process({.user = "myop-canary-ignored",
                                    .namespaces = {ns.name()},
                                    .pod_namespace = ns.name(),
                                    .extra_args = {}});
  operator_process.start();
  testenv::kubectl_apply(
      v1beta1_manifest(ns.name(), "web", "  canary:\n    enabled: false\n    targetVersion: \"1.28.0\"\n"));
  REQUIRE(eventually([&] { return myresource_ready(ns.name(), "web"); }, 120s));

  const std::string annotate = "annotate mr web -n " + ns.name() + " myorg.io/canary=true";
  const std::string warning =
      "annotation myorg.io/canary \"true\" is ignored: spec.canary.enabled is false, and spec.canary wins "
      "over "
      "the annotations";
  // The policies are in force a moment after they are installed: a server-side dry run shows when.
  testenv::CommandResult dry_run;
  REQUIRE(eventually(
      [&] {
        dry_run = testenv::kubectl(annotate + " --dry-run=server");
        return dry_run.output.find(warning) != std::string::npos;
      },
      30s));

  const auto annotated = testenv::kubectl(annotate);
  INFO(annotated.output);
  CHECK(annotated.ok());  // a warning, not a refusal
  CHECK_THAT(annotated.output, Catch::Contains("Warning:") && Catch::Contains(warning) &&
                                   Catch::Contains("myresources.myorg.io-canary-annotations-ignored"));

  // The operator says the same on the object, and runs no canary: spec.canary.enabled is false.
  INFO("operator log:\n" << operator_process.log_tail(30));
  REQUIRE(eventually(
      [&] { return has_event(ns.name(), "MyResource", "web", "Warning", "AnnotationIgnored"); }, 60s));
  const std::string events = describe(events_about(ns.name(), "MyResource", "web"));
  INFO(events);
  CHECK(events.find(warning) != std::string::npos);
  // A witness that a pass after the annotation has finished: a spec change reaches the status.
  testenv::kubectl_or_fail("patch mr web -n " + ns.name() + " --type merge -p '{\"spec\":{\"replicas\":2}}'");
  REQUIRE(eventually(
      [&] {
        return myresource_ready(ns.name(), "web") && deployment_rolled(ns.name(), "web", "nginx:1.27.1") &&
               jsonpath("deployment", ns.name(), "web", "{.spec.replicas}") == "2";
      },
      120s));
  CHECK(deployment_gone(ns.name(), "web-canary"));
  CHECK_FALSE(has_event(ns.name(), "MyResource", "web", "Normal", "CanaryRunning"));
  // Read as v1alpha1 the object has no canary either.
  CHECK(jsonpath("myresources.v1alpha1.myorg.io", ns.name(), "web",
                 "{.metadata.annotations.myorg\\.io/canary}") == "false");

  // A value that is no setting is refused on v1beta1 as on v1alpha1.
  const auto refused =
      testenv::kubectl("annotate --overwrite mr web -n " + ns.name() + " myorg.io/canary=yes");
  INFO(refused.output);
  CHECK_FALSE(refused.ok());
  CHECK_THAT(refused.output, Catch::Contains("myorg.io/canary must be \"true\" or \"false\""));

  // myorg.io/features means nothing on v1beta1: written there without a version, the same two signals.
  const std::string features_warning =
      "annotation myorg.io/features \"canary=false\" is ignored: it means nothing on myorg.io/v1beta1";
  const auto features =
      testenv::kubectl("annotate mr web -n " + ns.name() + " myorg.io/features=canary=false");
  INFO(features.output);
  CHECK(features.ok());
  CHECK_THAT(features.output, Catch::Contains(features_warning));
  CHECK(eventually(
      [&] {
        return describe(events_about(ns.name(), "MyResource", "web")).find(features_warning) !=
               std::string::npos;
      },
      60s));
  CHECK(operator_process.running());
}
