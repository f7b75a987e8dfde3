// Adoption with the real operator binary on the real control plane: a Deployment that carries the
// operator's exact labels and no controller owner is taken over by the MyResource its labels name
// (controller ownerReference, blockOwnerDeletion) and reconciled to the desired state; one with
// another controller is left alone.
#include <catch2/catch.hpp>

#include <sstream>

#include "myresource/operator_process.h"
#include "support/testenv.h"

using namespace myop;
using namespace myop::testing;
using namespace std::chrono_literals;

namespace {

// "<kind> <name> <uid> <controller> <blockOwnerDeletion>" of the only owner reference, "" without.
std::string owner_of(const std::string& namespace_, const std::string& name) {
  return jsonpath("deployment", namespace_, name,
                  "{range .metadata.ownerReferences[*]}{.kind} {.name} {.uid} {.controller} "
                  "{.blockOwnerDeletion};{end}");
}

// A Deployment as someone might have made it by hand, with the operator's labels and selector.
std::string hand_made_deployment(const std::string& namespace_, const std::string& name,
                                 const std::string& image, const std::string& owner_references = "") {
  return "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: " + name +
         "\n  namespace: " + namespace_ + "\n  labels:\n    app.kubernetes.io/name: " + name +
         "\n    app.kubernetes.io/managed-by: my-operator\n" + "    myorg.io/myresource: " + name +
         "\n    myorg.io/track: stable\n" + owner_references +
         "spec:\n  replicas: 1\n  selector:\n    matchLabels:\n      app.kubernetes.io/name: " + name +
         "\n      myorg.io/myresource: " + name + "\n      myorg.io/track: stable\n" +
         "  template:\n    metadata:\n      labels:\n        app.kubernetes.io/name: " + name +
         "\n        myorg.io/myresource: " + name + "\n        myorg.io/track: stable\n" +
         "    spec:\n      containers:\n      - name: app\n        image: " + image + "\n";
}

}  // namespace

TEST_CASE("a Deployment with the operator's labels and no owner is adopted by its MyResource and reconciled",
          "[myresource][operator][adoption]") {
  testenv::ScopedNamespace ns("mr-adopt");
  OperatorProcess operator_process(
      {.user = "myop-adopt", .namespaces = {ns.name()}, .pod_namespace = ns.name(), .extra_args = {}});

  SECTION(
      "kept by kubectl delete --cascade=orphan while the operator runs, then adopted by a new MyResource "
      "of the same name") {
    operator_process.start();
    testenv::kubectl_apply(myresource_manifest(ns.name(), "web", "nginx:1.27.1", 1));
    REQUIRE(eventually([&] { return myresource_ready(ns.name(), "web"); }, 120s));
    const std::string old_owner = jsonpath("myresource", ns.name(), "web", "{.metadata.uid}");
    const std::string deployment_uid = jsonpath("deployment", ns.name(), "web", "{.metadata.uid}");

    // The user keeps the children: the operator's finalizer must not delete them, and the garbage
    // collector removes their owner reference.
    const std::size_t delete_mark = audit_mark();
    testenv::kubectl_or_fail("delete myresource web -n " + ns.name() +
                             " --cascade=orphan --wait=true --timeout=60s");
    REQUIRE(eventually([&] { return myresource_gone(ns.name(), "web"); }, 60s));
    REQUIRE(eventually([&] { return owner_of(ns.name(), "web").empty(); }, 60s));
    operator_process.wait_until_settled();  // what the operator does about the deletion, it has done
    CHECK(jsonpath("deployment", ns.name(), "web", "{.metadata.uid}") == deployment_uid);
    const auto delete_writes = audit_writes(operator_process.user(), delete_mark);
    INFO("operator writes during the deletion:\n" << describe(delete_writes));
    for (const auto& write : delete_writes) CHECK(write.resource != "deployments");

    const std::size_t mark = audit_mark();
    testenv::kubectl_apply(myresource_manifest(ns.name(), "web", "nginx:1.27.2", 3));
    std::string new_owner;
    REQUIRE(eventually(
        [&] { return !(new_owner = jsonpath("myresource", ns.name(), "web", "{.metadata.uid}")).empty(); },
        30s));
    REQUIRE(new_owner != old_owner);
    REQUIRE(eventually(
        [&] { return owner_of(ns.name(), "web") == "MyResource web " + new_owner + " true true;"; }, 60s));
    REQUIRE(eventually([&] { return deployment_rolled(ns.name(), "web", "nginx:1.27.2"); }, 120s));
    CHECK(jsonpath("deployment", ns.name(), "web", "{.spec.replicas}") == "3");
    CHECK(jsonpath("deployment", ns.name(), "web", "{.metadata.uid}") ==
          deployment_uid);  // adopted, not replaced
    CHECK(eventually([&] { return myresource_ready(ns.name(), "web"); }, 60s));
    const auto writes = audit_writes(operator_process.user(), mark);
    INFO("operator writes:\n" << describe(writes));
    for (const auto& write : writes) {
      if (write.resource == "deployments") CHECK(write.verb == "patch");
    }
  }

  SECTION("made by hand before its MyResource: adopted and put into the desired state") {
    operator_process.start();
    auto created = testenv::kubectl_apply(hand_made_deployment(ns.name(), "api", "nginx:1.26.0"));
    REQUIRE(created.ok());
    REQUIRE(eventually([&] { return deployment_rolled(ns.name(), "api", "nginx:1.26.0"); }, 60s));
    const std::string deployment_uid = jsonpath("deployment", ns.name(), "api", "{.metadata.uid}");

    testenv::kubectl_apply(myresource_manifest(ns.name(), "api", "nginx:1.27.1", 2));
    REQUIRE(eventually([&] { return myresource_ready(ns.name(), "api"); }, 120s));
    const std::string owner = jsonpath("myresource", ns.name(), "api", "{.metadata.uid}");
    CHECK(owner_of(ns.name(), "api") == "MyResource api " + owner + " true true;");
    CHECK(deployment_rolled(ns.name(), "api", "nginx:1.27.1"));
    CHECK(jsonpath("deployment", ns.name(), "api", "{.spec.replicas}") == "2");
    CHECK(jsonpath("deployment", ns.name(), "api", "{.metadata.uid}") == deployment_uid);
    // The operator's own marks and its hardened pod.
    CHECK_FALSE(
        jsonpath("deployment", ns.name(), "api", "{.metadata.annotations.myorg\\.io/spec-hash}").empty());
    CHECK(jsonpath("deployment", ns.name(), "api",
                   "{.spec.template.spec.securityContext.runAsNonRoot} "
                   "{.spec.template.spec.containers[0].securityContext.allowPrivilegeEscalation}") ==
          "true false");
  }

  SECTION("one with another controller is not adopted, and the MyResource says why") {
    operator_process.start();
    testenv::kubectl_or_fail("create configmap owner -n " + ns.name());
    const std::string config_map_uid = jsonpath("configmap", ns.name(), "owner", "{.metadata.uid}");
    const std::string owner_references =
        "  ownerReferences:\n  - apiVersion: v1\n    kind: ConfigMap\n"
        "    name: owner\n    uid: " +
        config_map_uid + "\n    controller: true\n";
    auto created =
        testenv::kubectl_apply(hand_made_deployment(ns.name(), "taken", "nginx:1.26.0", owner_references));
    REQUIRE(created.ok());
    const std::string generation = jsonpath("deployment", ns.name(), "taken", "{.metadata.generation}");

    testenv::kubectl_apply(myresource_manifest(ns.name(), "taken", "nginx:1.27.1", 2));
    REQUIRE(eventually([&] { return condition_status(ns.name(), "taken", "Degraded") == "True"; }, 120s));
    CHECK(jsonpath("myresource", ns.name(), "taken", "{.status.conditions[?(@.type==\"Degraded\")].message}")
              .find("not controlled by this MyResource") != std::string::npos);
    // Retried with backoff: several attempts, none of which may take the Deployment.
    const std::string errors = R"(controller_runtime_reconcile_errors_total{controller="myresource"})";
    REQUIRE(eventually([&] { return operator_process.metric(errors) >= 3; }, 60s));
    CHECK(owner_of(ns.name(), "taken") == "ConfigMap owner " + config_map_uid + " true ;");
    CHECK(jsonpath("deployment", ns.name(), "taken", "{.metadata.generation}") == generation);
    CHECK(jsonpath("deployment", ns.name(), "taken", "{.spec.template.spec.containers[0].image}") ==
          "nginx:1.26.0");
  }
  CHECK(operator_process.running());
}
