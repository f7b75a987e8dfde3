// The conversion webhook served by the operator (issue 20), on a control plane of its own (the
// [conversion] cases change the MyResource CRD: test/CMakeLists.txt gives them the controlplane_conversion
// fixture). The CRD there is the shipped one with v1beta1 served and stored and conversion by the
// webhook at the operator's loopback URL; the API server calls it for every read and write in the
// version that is not stored, and trusts it through the caBundle the operator keeps in the CRD.
#include <catch2/catch.hpp>

#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "base/base64.h"
#include "myresource/operator_process.h"
#include "myresource/types.h"
#include "support/testenv.h"

using namespace myop;
using namespace myop::testing;
using namespace std::chrono_literals;

namespace {

std::string jsonpath(const std::string& what, const std::string& path) {
  const auto result = testenv::kubectl("get " + what + " -o jsonpath='" + path + "'");
  return result.ok() ? result.output : "(error) " + result.output;
}

// Both versions served, `stored` the storage version, conversion by the webhook at `url`; by the
// versions' names, whatever their order in the CRD.
void serve_both_storing(const std::string& stored, const std::string& url) {
  std::istringstream names(jsonpath("crd myresources.myorg.io", "{.spec.versions[*].name}"));
  std::string patch;
  int index = 0;
  for (std::string name; names >> name; ++index) {
    const std::string path = "/spec/versions/" + std::to_string(index);
    patch += R"({"op":"replace","path":")" + path + R"(/served","value":true},)";
    patch += R"({"op":"replace","path":")" + path + R"(/storage","value":)" +
             (name == stored ? "true" : "false") + "},";
  }
  REQUIRE(index == 2);
  testenv::kubectl_or_fail(R"(patch crd myresources.myorg.io --type=json -p '[)" + patch +
                           R"({"op":"add","path":"/spec/conversion","value":{"strategy":"Webhook","webhook":)"
                           R"({"conversionReviewVersions":["v1"],"clientConfig":{"url":")" +
                           url + R"("}}}}]')");
  testenv::kubectl_or_fail("wait --for=condition=Established crd/myresources.myorg.io --timeout=60s");
}

// The shipped CRD: v1beta1 stored, v1alpha1 served, converted by the webhook at `url`.
void convert_through_webhook(const std::string& url) { serve_both_storing("v1beta1", url); }

// An operator of its own user in `ns` that serves the webhook on `port` of loopback with its
// self-managed certificates (and the RBAC they need), with `more_args` after.
OperatorOptions webhook_operator(const std::string& user, const std::string& ns, unsigned short port,
                                 const std::vector<std::string>& more_args = {}) {
  OperatorOptions options;
  options.user = user;
  options.namespaces = {ns};
  options.pod_namespace = ns;
  options.extra_cluster_role_files = {"webhook_role.yaml"};
  options.extra_role_files = {"webhook_secret_role.yaml"};
  options.extra_args = {"--webhook-bind-address", "127.0.0.1:" + std::to_string(port), "--webhook-cert-names",
                        "127.0.0.1"};
  options.extra_args.insert(options.extra_args.end(), more_args.begin(), more_args.end());
  return options;
}

}  // namespace

TEST_CASE(
    "conversion webhook: the API server converts through the operator both ways with the caBundle it keeps, "
    "and reports the webhook down without losing anything",
    "[myresource][operator][conversion]") {
  // Never a cluster of $KUBECONFIG: its CRD would point at this test's loopback webhook.
  if (!testenv::owns_control_plane()) FAIL("needs a control plane of its own: it changes the MyResource CRD");
  testenv::ScopedNamespace ns("conversion");
  const unsigned short port = free_port();
  OperatorProcess operator_process(
      webhook_operator("myop-conversion-" + ns.name(), ns.name(), port));  // installs the shipped CRD
  convert_through_webhook("https://127.0.0.1:" + std::to_string(port) + "/convert");
  operator_process.start();

  // The operator made its CA and put it into the CRD.
  std::string ca;
  const bool bundled = eventually(
      [&] {
        ca = jsonpath("secret my-operator-webhook-cert -n " + ns.name(), "{.data.ca\\.crt}");
        return !ca.empty() &&
               ca == jsonpath("crd myresources.myorg.io", "{.spec.conversion.webhook.clientConfig.caBundle}");
      },
      30s);
  INFO("operator log:\n" << operator_process.log_tail(30));
  REQUIRE(bundled);
  const auto decoded = base::decode_base64(ca);
  REQUIRE(decoded);
  CHECK(decoded->find("-----BEGIN CERTIFICATE-----") == 0);

  // Written as v1alpha1 (stored as v1beta1 through the webhook): read in each version as it is.
  const auto alpha = testenv::kubectl_apply(
      "apiVersion: myorg.io/v1alpha1\nkind: MyResource\nmetadata:\n  name: from-alpha\n  namespace: " +
      ns.name() +
      "\n  annotations:\n    myorg.io/canary: \"true\"\n    myorg.io/targetVersion: \"1.27.2\"\n"
      "spec:\n  image: nginx:1.27.1\n  replicas: 1\n");
  INFO(alpha.output);
  REQUIRE(alpha.ok());
  const std::string beta_of_alpha = "myresources.v1beta1.myorg.io from-alpha -n " + ns.name();
  const std::string alpha_of_alpha = "myresources.v1alpha1.myorg.io from-alpha -n " + ns.name();
  CHECK(jsonpath(beta_of_alpha, "{.apiVersion}") == "myorg.io/v1beta1");
  CHECK(jsonpath(beta_of_alpha, "{.spec.canary.enabled}") == "true");
  CHECK(jsonpath(beta_of_alpha, "{.spec.canary.targetVersion}") == "1.27.2");
  CHECK(jsonpath(beta_of_alpha, "{.metadata.annotations.myorg\\.io/canary}").empty());
  CHECK(jsonpath(alpha_of_alpha, "{.metadata.annotations.myorg\\.io/canary}") == "true");
  CHECK(jsonpath(alpha_of_alpha, "{.metadata.annotations.myorg\\.io/targetVersion}") == "1.27.2");
  CHECK(jsonpath(alpha_of_alpha, "{.spec.canary.enabled}").empty());  // v1alpha1 has its canary settings only

  // Written as v1beta1: read as v1alpha1 with the annotations.
  const auto beta = testenv::kubectl_apply(
      "apiVersion: myorg.io/v1beta1\nkind: MyResource\nmetadata:\n  name: from-beta\n  namespace: " +
      ns.name() +
      "\nspec:\n  image: nginx:1.27.1\n  replicas: 1\n  canary:\n    enabled: true\n    targetVersion: "
      "\"1.27.3\"\n"
      "  features:\n    orphanSweep: false\n");
  INFO(beta.output);
  REQUIRE(beta.ok());
  const std::string alpha_of_beta = "myresources.v1alpha1.myorg.io from-beta -n " + ns.name();
  CHECK(jsonpath(alpha_of_beta, "{.metadata.annotations.myorg\\.io/canary}") == "true");
  CHECK(jsonpath(alpha_of_beta, "{.metadata.annotations.myorg\\.io/targetVersion}") == "1.27.3");
  CHECK(jsonpath(alpha_of_beta, "{.metadata.annotations.myorg\\.io/features}") == "orphanSweep=false");

  // The operator (which reads v1beta1, the storage version) runs both, canaries included.
  for (const std::string name : {"from-alpha", "from-beta"}) {
    INFO(name << "\noperator log:\n" << operator_process.log_tail(30));
    CHECK(eventually(
        [&] {
          return testenv::kubectl("get deployment " + name + " -n " + ns.name()).ok() &&
                 testenv::kubectl("get deployment " + name + "-canary -n " + ns.name()).ok();
        },
        60s));
  }

  // The canary annotations are checked in both versions (each by its own policy): in v1beta1 they
  // supply what spec.canary leaves unset (docs/versioning.md "Canary annotations on every version").
  auto with_canary_annotation = [&](const std::string& api_version, const std::string& name) {
    return "apiVersion: myorg.io/" + api_version + "\nkind: MyResource\nmetadata:\n  name: " + name +
           "\n  namespace: " + ns.name() +
           "\n  annotations:\n    myorg.io/canary: \"yes\"\nspec:\n  image: nginx:1.27.1\n";
  };
  testenv::CommandResult refused_alpha;
  CHECK(eventually(  // the policy is in force a moment after it is installed
      [&] {
        refused_alpha = testenv::kubectl_apply(with_canary_annotation("v1alpha1", "policy-alpha"));
        return !refused_alpha.ok();
      },
      30s));
  CHECK_THAT(refused_alpha.output, Catch::Contains("myorg.io/canary must be"));
  testenv::CommandResult refused_beta;
  CHECK(eventually(
      [&] {
        refused_beta = testenv::kubectl_apply(with_canary_annotation("v1beta1", "policy-beta"));
        return !refused_beta.ok();
      },
      30s));
  CHECK_THAT(refused_beta.output, Catch::Contains("myorg.io/canary must be"));
  const auto latest = testenv::kubectl_apply(
      "apiVersion: myorg.io/v1beta1\nkind: MyResource\nmetadata:\n  name: latest\n  namespace: " + ns.name() +
      "\nspec:\n  image: nginx:1.27.1\n  canary:\n    enabled: true\n    targetVersion: latest\n");
  CHECK_FALSE(latest.ok());
  CHECK_THAT(latest.output, Catch::Contains("spec.canary.targetVersion must not be"));

  // The webhook down: the API server cannot serve v1alpha1 and says why; nothing is lost.
  operator_process.stop();
  const auto refused = testenv::kubectl("get " + alpha_of_alpha + " -o name");
  INFO(refused.output);
  CHECK_FALSE(refused.ok());
  CHECK_THAT(refused.output, Catch::Contains("conversion webhook"));
  // v1beta1, the stored version, needs no conversion.
  CHECK(jsonpath(beta_of_alpha, "{.spec.canary.targetVersion}") == "1.27.2");

  // Back up: everything reads again, as written.
  operator_process.start();
  CHECK(eventually([&] { return testenv::kubectl("get " + alpha_of_alpha + " -o name").ok(); }, 30s));
  CHECK(jsonpath(alpha_of_alpha, "{.metadata.annotations.myorg\\.io/targetVersion}") == "1.27.2");
  CHECK(jsonpath(alpha_of_beta, "{.metadata.annotations.myorg\\.io/targetVersion}") == "1.27.3");
}

// Rotation with validities short enough to see it: the serving certificate (12 s) is renewed every
// 8 s or so and the CA (30 s) every 20 s, each at a third of its validity left; throughout, every
// read that needs the conversion succeeds (the new CA reaches the caBundle before a certificate it
// signed is served, and the old CA stays trusted until it expires).
TEST_CASE("conversion webhook: the self-managed CA and certificate rotate while every conversion succeeds",
          "[myresource][operator][conversion]") {
  if (!testenv::owns_control_plane()) FAIL("needs a control plane of its own: it changes the MyResource CRD");
  testenv::ScopedNamespace ns("rotation");
  const unsigned short port = free_port();
  OperatorProcess operator_process(
      webhook_operator("myop-rotation-" + ns.name(), ns.name(), port,
                       {"--webhook-cert-validity", "12s", "--webhook-ca-validity", "30s"}));
  convert_through_webhook("https://127.0.0.1:" + std::to_string(port) + "/convert");
  operator_process.start();
  const auto applied = testenv::kubectl_apply(
      "apiVersion: myorg.io/v1beta1\nkind: MyResource\nmetadata:\n  name: web\n"
      "  namespace: " +
      ns.name() + "\nspec:\n  image: nginx:1.27.1\n  replicas: 1\n");
  INFO(applied.output);
  REQUIRE(applied.ok());

  const std::string secret = "secret my-operator-webhook-cert -n " + ns.name();
  std::set<std::string> serving_certificates;
  std::set<std::string> signing_cas;
  int reads = 0;
  std::vector<std::string> failures;
  const auto until = std::chrono::steady_clock::now() + 70s;
  while (std::chrono::steady_clock::now() < until) {
    const auto read = testenv::kubectl("get myresources.v1alpha1.myorg.io web -n " + ns.name() + " -o name");
    ++reads;
    if (!read.ok()) failures.push_back(read.output);
    serving_certificates.insert(jsonpath(secret, "{.data.tls\\.crt}"));
    const auto bundle = base::decode_base64(jsonpath(secret, "{.data.ca\\.crt}"));
    if (bundle) signing_cas.insert(bundle->substr(0, bundle->find("-----END CERTIFICATE-----")));
  }
  INFO(reads << " reads through the webhook; " << serving_certificates.size() << " serving certificates and "
             << signing_cas.size() << " CAs seen\noperator log:\n"
             << operator_process.log_tail(40));
  for (const auto& failure : failures) UNSCOPED_INFO("failed read: " << failure);
  CHECK(failures.empty());
  CHECK(serving_certificates.size() >= 5);  // 70 s of renewals every 8 s or so
  CHECK(signing_cas.size() >= 3);           // every 20 s or so
  WARN("rotation: " << reads << " reads through the webhook, " << failures.size() << " failed; "
                    << serving_certificates.size() << " serving certificates, " << signing_cas.size()
                    << " CAs");
}

namespace {

// The CRD one step before v1beta1 is stored: both versions served, v1alpha1 stored, converted by the
// webhook at `url`, and status.storedVersions [v1alpha1] (earlier cases of this control plane stored
// v1beta1). The operator, which works on v1beta1, reads everything through the webhook.
void v1alpha1_stored_crd(const std::string& url) {
  serve_both_storing("v1alpha1", url);
  testenv::kubectl_or_fail(
      R"(patch crd myresources.myorg.io --subresource=status --type=merge -p '{"status":{"storedVersions":["v1alpha1"]}}')");
}

}  // namespace

// The upgrade that makes v1beta1 the storage version, on 500 MyResources written as v1alpha1 (every
// tenth with a canary): the operator, restarted with the new CRD, rewrites each stored object once
// (a no-op write), after which etcd holds every one as v1beta1 and storedVersions is [v1beta1]; no
// Deployment is written, and v1alpha1 reads return what was written.
TEST_CASE(
    "storage migration: with v1beta1 the storage version the operator rewrites each stored v1alpha1 "
    "MyResource once and trims storedVersions without writing a Deployment",
    "[myresource][operator][conversion]") {
  if (!testenv::owns_control_plane()) FAIL("needs a control plane of its own: it changes the MyResource CRD");
  constexpr int kObjects = 500;
  testenv::ScopedNamespace ns("migration");
  const unsigned short port = free_port();
  OperatorOptions options = webhook_operator("myop-migration-" + ns.name(), ns.name(), port);
  options.namespaces = {};  // only an operator of every namespace migrates
  OperatorProcess operator_process(options);
  const std::string url = "https://127.0.0.1:" + std::to_string(port) + "/convert";
  v1alpha1_stored_crd(url);
  operator_process.start();

  const auto created = testenv::kubectl_apply(v1alpha1_fleet_manifest(ns.name(), kObjects));
  INFO(created.output.substr(0, 2000));
  REQUIRE(created.ok());
  auto ready = [&] {
    const auto statuses = testenv::kubectl(
        "get myresources.v1alpha1.myorg.io -n " + ns.name() +
        R"( -o jsonpath='{range .items[*]}{.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}')");
    std::size_t count = 0;
    std::istringstream lines(statuses.output);
    for (std::string line; std::getline(lines, line);) count += line == "True";
    return count;
  };
  INFO("operator log:\n" << operator_process.log_tail(40));
  REQUIRE(eventually([&] { return ready() == kObjects; }, 300s));
  CHECK(stored_api_versions(ns.name()) ==
        std::map<std::string, std::size_t>{{"myorg.io/v1alpha1", kObjects}});
  operator_process.wait_until_settled();  // the last status and event writes of the rollouts

  // The upgrade: the operator stopped, the CRD of this release (v1beta1 stored, conversion by the
  // operator's webhook), the operator started again.
  operator_process.stop();
  const auto mark = audit_mark();
  convert_through_webhook(url);
  operator_process.start();
  const auto started = std::chrono::steady_clock::now();
  REQUIRE(eventually(
      [&] { return jsonpath("crd myresources.myorg.io", "{.status.storedVersions}") == R"(["v1beta1"])"; },
      180s));
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  CHECK(stored_api_versions(ns.name()) == std::map<std::string, std::size_t>{{"myorg.io/v1beta1", kObjects}});

  // Each object of the namespace written once, by a patch of the object itself; no Deployment written.
  std::map<std::string, int> rewrites;
  std::size_t deployment_writes = 0;
  std::size_t writes = 0;
  for (const auto& write : audit_writes(options.user, mark)) {
    ++writes;
    if (write.resource == "deployments") {
      ++deployment_writes;
      UNSCOPED_INFO("Deployment write: " << write.describe());
    }
    if (write.resource == "myresources" && write.subresource.empty() && write.namespace_ == ns.name() &&
        write.verb == "patch" && write.code == 200)
      ++rewrites[write.name];
  }
  CHECK(deployment_writes == 0);
  CHECK(rewrites.size() == static_cast<std::size_t>(kObjects));
  std::size_t rewritten_twice = 0;
  for (const auto& [name, count] : rewrites) rewritten_twice += count > 1;
  CHECK(rewritten_twice == 0);
  CHECK(ready() == kObjects);

  // v1alpha1 reads return what was written, through the webhook.
  const std::string canary = "myresources.v1alpha1.myorg.io app-10 -n " + ns.name();
  CHECK(jsonpath(canary, "{.metadata.annotations.myorg\\.io/targetVersion}") == "1.27.2");
  CHECK(jsonpath("myresources.v1beta1.myorg.io app-10 -n " + ns.name(), "{.spec.canary.targetVersion}") ==
        "1.27.2");
  // Read as v1alpha1, a MyResource written as v1alpha1 is what was written: no field the v1beta1
  // schema would have defaulted, no annotation of the conversion.
  for (const std::string name : {"app-10", "app-11"}) {
    const std::string alpha = "myresources.v1alpha1.myorg.io " + name + " -n " + ns.name();
    CHECK(jsonpath(alpha, "{.spec}") == R"({"image":"nginx:1.27.1","replicas":1})");
    CHECK(jsonpath(alpha, "{.metadata.annotations.myorg\\.io/conversion-v1beta1}").empty());
  }
  CHECK(jsonpath("myresources.v1alpha1.myorg.io app-11 -n " + ns.name(),
                 "{.metadata.annotations.myorg\\.io/canary}")
            .empty());
  WARN("storage migration of " << kObjects << " MyResources: storedVersions [v1beta1] " << took
                               << " s after the operator started; " << rewrites.size()
                               << " objects rewritten once; " << writes << " operator writes in all, "
                               << deployment_writes << " of Deployments");

  // A restart now, with every object stored as v1beta1: the operator's v1beta1 lists need no
  // conversion. (The start before, with every object stored as v1alpha1, needed the operator's own
  // webhook, which it serves before its caches start: a preflight that took the API server's 500 for
  // a fatal error kept it from ever starting.) It starts, and writes nothing.
  operator_process.stop();
  const auto restart_mark = audit_mark();
  operator_process.start();
  CHECK(eventually([&] { return ready() == kObjects; }, 60s));
  // Its initial lists reconciled (one reconcile of each object at least), and all that followed.
  operator_process.wait_for_reconciles(kObjects);
  operator_process.wait_until_settled();
  // Of this namespace and of cluster-scoped objects (the CRD): watching every namespace, the operator
  // also finishes what earlier cases of this control plane left (their objects' finalizers).
  std::size_t after_restart = 0;
  for (const auto& write : audit_writes(options.user, restart_mark)) {
    if (!write.namespace_.empty() && write.namespace_ != ns.name()) continue;
    ++after_restart;
    UNSCOPED_INFO("write after the restart: " << write.describe());
  }
  CHECK(after_restart == 0);

  // The objects go while the operator still runs, so their finalizers are removed.
  testenv::kubectl("delete myresources.v1beta1.myorg.io --all -n " + ns.name() + " --wait=false");
  CHECK(eventually([&] { return stored_api_versions(ns.name()).empty(); }, 180s));
}

namespace {

void point_webhook_at(const std::string& url) {
  testenv::kubectl_or_fail(
      R"(patch crd myresources.myorg.io --type=json -p '[{"op":"replace","path":"/spec/conversion/webhook/clientConfig/url","value":")" +
      url + R"("}]')");
}

// The served version the operator does not read (myresource_type() names the one it does).
std::string unwatched_version() {
  return myresource::myresource_type().version == "v1alpha1" ? "v1beta1" : "v1alpha1";
}

}  // namespace

// Every MyResource stored in the version the operator does not read, so each of its lists and watches
// needs the conversion. The webhook down (the CRD pointed at a closed port): the API server refuses
// those reads with the webhook's error, the running operator's /readyz fails naming its MyResource
// informer and that error, and nothing is deleted; the webhook back: ready again, and a change made
// meanwhile reaches its Deployment.
TEST_CASE(
    "conversion webhook down under a running operator: not ready with the API server's conversion error, "
    "nothing lost, all resumes when it is back",
    "[myresource][operator][conversion]") {
  if (!testenv::owns_control_plane()) FAIL("needs a control plane of its own: it changes the MyResource CRD");
  const auto test_start = std::chrono::steady_clock::now();
  testenv::ScopedNamespace ns("webhook-down");
  const unsigned short port = free_port();
  OperatorProcess operator_process(webhook_operator("myop-webhook-down-" + ns.name(), ns.name(), port));
  const std::string watched = myresource::myresource_type().version;
  const std::string stored = unwatched_version();
  const std::string webhook_url = "https://127.0.0.1:" + std::to_string(port) + "/convert";
  serve_both_storing(stored, webhook_url);
  operator_process.start();

  const std::vector<std::string> names = {"alpha", "beta"};
  for (const auto& name : names) {
    const auto applied = testenv::kubectl_apply(
        "apiVersion: myorg.io/" + stored + "\nkind: MyResource\nmetadata:\n  name: " + name +
        "\n  namespace: " + ns.name() + "\nspec:\n  image: nginx:1.27.1\n  replicas: 1\n");
    INFO(applied.output);
    REQUIRE(applied.ok());
  }
  const std::string stored_collection = "myresources." + stored + ".myorg.io -n " + ns.name();
  const std::string watched_collection = "myresources." + watched + ".myorg.io -n " + ns.name();
  auto finalizers = [&] {
    return jsonpath(stored_collection,
                    "{range .items[*]}{.metadata.name}={.metadata.finalizers}{\"\\n\"}{end}");
  };
  auto deployments = [&] {
    return jsonpath("deployments -n " + ns.name(),
                    "{range .items[*]}{.metadata.name} {.metadata.uid}{\"\\n\"}{end}");
  };
  {
    INFO("operator log:\n" << operator_process.log_tail(30));
    REQUIRE(eventually(
        [&] {
          return testenv::kubectl("get deployment alpha -n " + ns.name()).ok() &&
                 testenv::kubectl("get deployment beta -n " + ns.name()).ok() &&
                 finalizers() == "alpha=[\"myorg.io/finalizer\"]\nbeta=[\"myorg.io/finalizer\"]\n";
        },
        60s));
  }
  // Stored in the version the operator does not read: every read it makes goes through the webhook.
  CHECK(stored_api_versions(ns.name()) == std::map<std::string, std::size_t>{{"myorg.io/" + stored, 2}});
  REQUIRE(operator_process.readyz().status == 200);
  const std::string deployments_before = deployments();
  const std::string finalizers_before = finalizers();
  const auto mark = audit_mark();

  // Down: the CRD's webhook at a port nobody listens on. The API server rebuilds the CRD's storage,
  // which ends the operator's watches; their reopening needs the conversion. A change while down.
  const auto down_at = std::chrono::steady_clock::now();
  point_webhook_at("https://127.0.0.1:" + std::to_string(free_port()) + "/convert");
  testenv::kubectl_or_fail("patch " + stored_collection.substr(0, stored_collection.find(' ')) +
                           " alpha -n " + ns.name() +
                           R"( --type=merge -p '{"spec":{"image":"nginx:1.27.2"}}')");

  // The API server says why it cannot serve the operator's version...
  testenv::CommandResult refused;
  CHECK(eventually(
      [&] {
        refused = testenv::kubectl("get " + watched_collection + " -o name --request-timeout=10s");
        return !refused.ok() && refused.output.find("conversion webhook for") != std::string::npos;
      },
      30s));
  INFO("kubectl get in " << watched << ": " << refused.output);
  CHECK_THAT(refused.output,
             Catch::Contains("conversion webhook for myorg.io/" + stored + ", Kind=MyResource failed"));
  // ...and the operator's readiness says the same, naming its MyResource cache.
  OperatorProcess::Probe probe;
  const bool unready = eventually(
      [&] {
        probe = operator_process.readyz();
        return probe.status == 503 && probe.body.find("conversion webhook for") != std::string::npos;
      },
      60s);  // two failed attempts to reopen the watch; the API server answers some only after 30 s
  const double unready_after = seconds_since(down_at);
  INFO("/readyz " << probe.status << ":\n"
                  << probe.body << "\noperator log:\n"
                  << operator_process.log_tail(40));
  CHECK(unready);
  CHECK_THAT(probe.body, Catch::Contains("informers: myresources"));
  CHECK_THAT(probe.body, Catch::Contains("myresources.myorg.io in namespace " + ns.name()));
  CHECK_THAT(probe.body, Catch::Contains("list and watch failing"));
  CHECK_THAT(operator_process.log_tail(200), Catch::Contains("Informer failing"));
  CHECK(operator_process.running());

  // Nothing lost: every MyResource with its finalizer, every Deployment (same uid), no delete sent.
  CHECK(finalizers() == finalizers_before);
  CHECK(deployments() == deployments_before);
  for (const auto& write : audit_writes(operator_process.user(), mark)) {
    INFO("operator write while down: " << write.describe());
    CHECK(write.verb != "delete");
    CHECK(write.verb != "deletecollection");
  }

  // Back up: ready again, and the change made while down reaches its Deployment.
  const auto up_at = std::chrono::steady_clock::now();
  point_webhook_at(webhook_url);
  const bool ready_again = eventually([&] { return operator_process.readyz().status == 200; }, 60s);
  const double ready_after = seconds_since(up_at);
  INFO("operator log:\n" << operator_process.log_tail(40));
  CHECK(ready_again);
  CHECK(eventually(
      [&] {
        return jsonpath("deployment alpha -n " + ns.name(), "{.spec.template.spec.containers[0].image}") ==
               "nginx:1.27.2";
      },
      30s));
  const double changed_after = seconds_since(up_at);
  CHECK_THAT(operator_process.log_tail(200), Catch::Contains("Informer recovered"));
  CHECK(finalizers() == finalizers_before);
  CHECK(jsonpath("deployment beta -n " + ns.name(), "{.spec.template.spec.containers[0].image}") ==
        "nginx:1.27.1");
  WARN("webhook down (operator reads "
       << watched << ", objects stored as " << stored << "): /readyz failed " << unready_after
       << " s after the webhook went down; ready again " << ready_after
       << " s after it was back, the change made meanwhile in its "
       << "Deployment " << changed_after << " s after; test " << seconds_since(test_start) << " s");
}
