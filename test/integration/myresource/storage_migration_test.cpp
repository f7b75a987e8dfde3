// The storage version migration (runtime/migration/storage_migration.h) with an object the API server refuses
// to update, on the [conversion] control plane (it changes the MyResource CRD): two sharded replicas, each
// under a user of its own, so the audit log tells who wrote what.
#include <catch2/catch.hpp>

#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "myresource/operator_process.h"
#include "runtime/sharding/shard_ring.h"
#include "support/testenv.h"

using namespace myop;
using namespace myop::testing;
using namespace std::chrono_literals;

namespace {

constexpr const char* kCrd = "crd myresources.myorg.io";
constexpr const char* kPolicy = "myorg.io-tenant-resource-limits";

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  if (at == std::string::npos) FAIL("expected '" << from << "' in:\n" << text);
  return text.replace(at, from.size(), to);
}

std::string crd_field(const std::string& path) {
  const auto result = testenv::kubectl(std::string("get ") + kCrd + " -o jsonpath='" + path + "'");
  return result.ok() ? result.output : "(error) " + result.output;
}

// `version` the storage version, by the versions' names (the API server adds it to storedVersions).
void store_as(const std::string& version) {
  std::istringstream names(crd_field("{.spec.versions[*].name}"));
  std::string patch;
  int index = 0;
  for (std::string name; names >> name; ++index)
    patch += std::string(patch.empty() ? "" : ",") + R"({"op":"replace","path":"/spec/versions/)" +
             std::to_string(index) + R"(/storage","value":)" + (name == version ? "true" : "false") + "}";
  testenv::kubectl_or_fail(std::string("patch ") + kCrd + " --type=json -p '[" + patch + "]'");
}

// The shipped policy that asks for resource limits (config/policy/native), bound with Deny to one
// namespace only, whatever the shipped binding's defaults; both removed at the end.
class LimitsPolicyInForce {
 public:
  explicit LimitsPolicyInForce(const std::string& namespace_)
      : binding_("myop-test-migration-" + namespace_) {
    const std::string shipped =
        testenv::read_file(testenv::source_dir() + "/config/policy/native/required_resource_limits.yaml");
    const std::string policy = shipped.substr(0, shipped.find("\n---\n"));
    REQUIRE_THAT(policy, Catch::Contains("kind: ValidatingAdmissionPolicy") && Catch::Contains(kPolicy));
    auto applied = testenv::kubectl_apply(policy);
    INFO(applied.output);
    REQUIRE(applied.ok());
    applied = testenv::kubectl_apply(
        "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicyBinding\nmetadata:\n"
        "  name: " +
        binding_ + "\nspec:\n  policyName: " + kPolicy +
        "\n  validationActions: [Deny]\n  matchResources:\n    namespaceSelector:\n      matchLabels:\n"
        "        kubernetes.io/metadata.name: " +
        namespace_ + "\n");
    INFO(applied.output);
    REQUIRE(applied.ok());
  }
  ~LimitsPolicyInForce() {
    testenv::kubectl("delete validatingadmissionpolicybinding " + binding_ + " --ignore-not-found");
    testenv::kubectl(std::string("delete validatingadmissionpolicy ") + kPolicy + " --ignore-not-found");
  }
  LimitsPolicyInForce(const LimitsPolicyInForce&) = delete;
  LimitsPolicyInForce& operator=(const LimitsPolicyInForce&) = delete;

 private:
  std::string binding_;
};

std::string v1alpha1_manifest(const std::string& namespace_, const std::string& name, bool limits) {
  return "---\napiVersion: myorg.io/v1alpha1\nkind: MyResource\nmetadata:\n  name: " + name +
         "\n  namespace: " + namespace_ + "\nspec:\n  image: nginx:1.27.1\n  replicas: 1\n" +
         (limits ? "  resources:\n    limits:\n      cpu: 100m\n      memory: 64Mi\n" : "");
}

// A storage migration's no-op write of a MyResource, in any namespace.
bool is_any_migration_write(const AuditEntry& entry) {
  return entry.resource == "myresources" && entry.subresource.empty() && entry.verb == "patch" &&
         entry.request_uri.find("fieldManager=my-operator-storage-migration") != std::string::npos;
}

bool is_migration_write(const AuditEntry& entry, const std::string& namespace_) {
  return is_any_migration_write(entry) && entry.namespace_ == namespace_;
}

bool is_trim(const AuditEntry& entry) {
  return entry.resource == "customresourcedefinitions" && entry.subresource == "status" &&
         entry.name == "myresources.myorg.io" && entry.verb == "patch";
}

}  // namespace

// The shipped limits policy, bound with Deny, refuses the no-op update of an object written before it
// was in force (the CRD accepts an object without limits; the policy does not, on CREATE or UPDATE).
// The pass goes through the other 19 objects and ends; the refused one is reported (a Warning Event on
// it, the migrator's metrics, a log line) and storedVersions keeps v1alpha1 through later passes, which
// write that object alone; once its owner adds limits, the trim happens. The audit log shows one
// replica of two writing, every other object written once, the refused one once a pass.
TEST_CASE(
    "storage migration: an object the shipped policy refuses on update is reported and holds the trim until "
    "it is fixed, while one sharded replica migrates, each object once a pass",
    "[myresource][operator][conversion]") {
  if (!testenv::owns_control_plane()) FAIL("needs a control plane of its own: it changes the MyResource CRD");
  constexpr int kObjects = 20;
  const std::string refused = "old";
  testenv::ScopedNamespace ns("migration-refused");
  testenv::ScopedNamespace leases("migration-leases");

  // Two sharded replicas, started below; they migrate as soon as they see a new storage version
  // (--storage-migration-interval) and write refused objects again every 2 s. (Made first: the first
  // OperatorProcess of a run applies the fixture's CRD, v1beta1 stored.)
  const std::string role =
      replaced(testenv::read_file(testenv::source_dir() + "/config/rbac/sharding_role.yaml"),
               "namespace: my-operator-system", "namespace: " + leases.name());
  auto applied = testenv::kubectl_apply(role);
  INFO(applied.output);
  REQUIRE(applied.ok());
  std::vector<std::unique_ptr<OperatorProcess>> replicas;
  for (int i = 0; i < 2; ++i) {
    OperatorOptions options;
    options.user = "myop-migration-" + std::to_string(i) + "-" + ns.name();
    options.pod_namespace = leases.name();
    options.extra_args = {"--sharding", "--storage-migration-interval", "1s",
                          "--storage-migration-retry-interval", "2s"};
    testenv::kubectl_or_fail("create rolebinding " + options.user + "-sharding -n " + leases.name() +
                             " --role my-operator-sharding --user " + options.user);
    replicas.push_back(std::make_unique<OperatorProcess>(options));
  }

  // The fixture's CRD (conversion by its webhook), v1alpha1 stored; every object written as v1alpha1.
  testenv::apply_crd();
  store_as("v1alpha1");
  // Nothing to migrate yet (earlier cases of this control plane stored v1beta1).
  testenv::kubectl_or_fail(
      std::string("patch ") + kCrd +
      R"( --subresource=status --type=merge -p '{"status":{"storedVersions":["v1alpha1"]}}')");
  std::string manifest;
  for (int i = 0; i + 1 < kObjects; ++i)
    manifest += v1alpha1_manifest(ns.name(), "app-" + std::to_string(i), true);
  manifest += v1alpha1_manifest(ns.name(), refused, false);
  const auto created = testenv::kubectl_apply(manifest);
  INFO(created.output);
  REQUIRE(created.ok());
  REQUIRE(stored_api_versions(ns.name()) ==
          std::map<std::string, std::size_t>{{"myorg.io/v1alpha1", kObjects}});

  // The policy in force afterwards: an update of `old` as it is is refused.
  LimitsPolicyInForce policy(ns.name());
  testenv::CommandResult dry_run;
  REQUIRE(eventually(
      [&] {
        dry_run = testenv::kubectl("patch myresource " + refused + " -n " + ns.name() +
                                   " --type=merge -p '{}' --dry-run=server");
        return !dry_run.ok();
      },
      30s));
  CHECK_THAT(dry_run.output, Catch::Contains(kPolicy));

  for (auto& replica : replicas) replica->start();
  auto logs = [&] {
    std::string text;
    for (auto& replica : replicas) text += "--- " + replica->user() + "\n" + replica->log_tail(30);
    return text;
  };
  INFO("operator logs:\n" << logs());
  // Settled: each owns half of the slots (so slot 0 is not handed over in the middle of the test).
  REQUIRE(eventually(
      [&] {
        for (auto& replica : replicas)
          if (replica->metric("myoperator_shard_members") != 2 ||
              replica->metric("myoperator_shard_slots_owned") != runtime::kShardSlots / 2)
            return false;
        return true;
      },
      60s));

  // The 19 objects the policy accepts rolled out (their reconciles write them no more), `old` not even
  // given its finalizer (the policy refuses that write too).
  REQUIRE(eventually(
      [&] {
        for (int i = 0; i + 1 < kObjects; ++i)
          if (!myresource_ready(ns.name(), "app-" + std::to_string(i))) return false;
        return true;
      },
      90s));

  // The upgrade: v1beta1 stored. storedVersions lists both.
  const auto mark = audit_mark();
  store_as("v1beta1");
  REQUIRE(crd_field("{.status.storedVersions}") == R"(["v1alpha1","v1beta1"])");

  // The pass ends: 19 objects in v1beta1, the refused one reported by the replica that migrates.
  const std::string refused_total = R"(myoperator_storage_migration_objects_total{result="refused"})";
  int migrator = -1;
  REQUIRE(eventually(
      [&] {
        for (int i = 0; i < 2; ++i)
          if (replicas[i]->metric(refused_total) >= 1) migrator = i;
        return migrator >= 0 && stored_api_versions(ns.name()) ==
                                    std::map<std::string, std::size_t>{{"myorg.io/v1beta1", kObjects - 1},
                                                                       {"myorg.io/v1alpha1", 1}};
      },
      40s));
  OperatorProcess& migrating = *replicas[static_cast<std::size_t>(migrator)];
  OperatorProcess& standing_by = *replicas[static_cast<std::size_t>(1 - migrator)];
  CHECK(migrating.metric(R"(myoperator_storage_migration_objects_remaining{state="refused"})") == 1);
  // A reconcile's status write between the list and the no-op write makes the latter a 409.
  const std::string rewritten_total = R"(myoperator_storage_migration_objects_total{result="rewritten"})";
  const std::string meanwhile_total =
      R"(myoperator_storage_migration_objects_total{result="written_meanwhile"})";
  // The migration covers the whole cluster: MyResources of earlier cases whose namespaces are still
  // terminating (their finalizers outlive their operators) are rewritten too. So the metric equals
  // the writes the audit log shows in every namespace (accepted or 409), and 19 of them are here.
  std::size_t written_here = 0;
  std::size_t written_everywhere = 0;
  const bool counted = eventually(
      [&] {
        written_here = 0;
        written_everywhere = 0;
        for (const auto& entry : audit_writes(migrating.user(), mark)) {
          if (!is_any_migration_write(entry) || (entry.code != 200 && entry.code != 409)) continue;
          ++written_everywhere;
          written_here += entry.namespace_ == ns.name() ? 1 : 0;
        }
        return migrating.metric(rewritten_total) + migrating.metric(meanwhile_total) ==
               static_cast<double>(written_everywhere);
      },
      20s);
  CHECK(counted);
  CHECK(written_here == static_cast<std::size_t>(kObjects - 1));
  CHECK(standing_by.metric(refused_total) == 0);
  CHECK(standing_by.metric(rewritten_total) + standing_by.metric(meanwhile_total) == 0);
  CHECK(eventually(
      [&] { return has_event(ns.name(), "MyResource", refused, "Warning", "StorageMigrationRefused"); },
      20s));
  const auto events = events_about(ns.name(), "MyResource", refused);
  INFO("events about " << refused << ":\n" << describe(events));
  bool names_policy = false;
  for (const auto& event : events) names_policy |= event.find(kPolicy) != std::string::npos;
  CHECK(names_policy);
  const std::string log = testenv::read_file(migrating.log_path());
  CHECK_THAT(log, Catch::Contains("refused the storage migration's no-op write") &&
                      Catch::Contains("name=" + refused) && Catch::Contains(kPolicy));

  // The trim waits: a later pass (writing the refused object alone) was refused again, and
  // storedVersions still lists v1alpha1.
  REQUIRE(eventually([&] { return migrating.metric(refused_total) >= 2; }, 20s));
  CHECK(crd_field("{.status.storedVersions}") == R"(["v1alpha1","v1beta1"])");

  // Its owner adds limits (the policy accepts that write, stored in v1beta1): the trim happens.
  testenv::kubectl_or_fail(
      "patch myresource " + refused + " -n " + ns.name() +
      R"( --type=merge -p '{"spec":{"resources":{"limits":{"cpu":"100m","memory":"64Mi"}}}}')");
  REQUIRE(eventually([&] { return crd_field("{.status.storedVersions}") == R"(["v1beta1"])"; }, 30s));
  CHECK(stored_api_versions(ns.name()) == std::map<std::string, std::size_t>{{"myorg.io/v1beta1", kObjects}});
  CHECK(migrating.metric(R"(myoperator_storage_migration_objects_remaining{state="refused"})") == 0);
  const double refusals = migrating.metric(refused_total);

  // The audit log: one replica writes; every object but the refused one once; the refused one once a
  // pass (refused each time, then a 409 after the fix); one trim.
  std::map<std::string, std::vector<int>> codes;
  std::size_t trims = 0;
  for (const auto& entry : audit_writes(migrating.user(), mark)) {
    if (is_migration_write(entry, ns.name())) codes[entry.name].push_back(entry.code);
    trims += is_trim(entry);
  }
  std::size_t other_writes = 0;
  for (const auto& entry : audit_writes(standing_by.user(), mark))
    other_writes += is_migration_write(entry, ns.name()) || is_trim(entry);
  CHECK(other_writes == 0);
  CHECK(trims == 1);
  CHECK(codes.size() == static_cast<std::size_t>(kObjects));
  for (const auto& [name, answers] : codes) {
    INFO(name);
    if (name != refused) {
      REQUIRE(answers.size() == 1);
      CHECK((answers[0] == 200 || answers[0] == 409));
      continue;
    }
    REQUIRE(answers.size() >= 3);
    CHECK(static_cast<double>(answers.size()) == refusals + 1);
    CHECK(answers.back() == 409);
    for (std::size_t i = 0; i + 1 < answers.size(); ++i) CHECK(answers[i] == 403);
  }
  WARN("storage migration with a refused object: "
       << codes.size() << " objects written by one replica of two, " << migrating.metric(rewritten_total)
       << " rewritten, " << migrating.metric(meanwhile_total) << " written meanwhile (409), " << refusals
       << " refused passes before the fix");

  // Leave the CRD as the fixture made it; the MyResources go with their namespace while the operators
  // still run (they hold finalizers).
  testenv::kubectl("delete myresources --all -n " + ns.name() + " --wait=true --timeout=60s");
  testenv::apply_crd();
}
