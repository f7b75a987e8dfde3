// --namespaces is a hard scope: an operator limited to namespaces A and B reconciles there, leaves a
// MyResource in C untouched (no finalizer, no Deployment, no status) and never sends the API server
// a request naming C or listing/watching across namespaces. Without the flag it watches all
// namespaces and reconciles C too. The real operator binary, counted in the audit log by its user.
#include <catch2/catch.hpp>

#include "myresource/cluster_listing.h"
#include "myresource/operator_process.h"
#include "support/testenv.h"

using namespace myop;
using namespace myop::testing;
using namespace std::chrono_literals;

namespace {

bool is_list_or_watch(const AuditEntry& entry) { return entry.verb == "list" || entry.verb == "watch"; }

bool watched_type(const AuditEntry& entry) {
  return entry.resource == "myresources" || entry.resource == "deployments";
}

}  // namespace

TEST_CASE(
    "namespace scope: --namespaces A,B reconciles A and B and never touches C, and without it C is "
    "reconciled too",
    "[myresource][operator][scope]") {
  if (!testenv::owns_control_plane()) FAIL("needs the ctest fixture's control plane and its audit log");
  testenv::ScopedNamespace a("mr-scope-a");
  testenv::ScopedNamespace b("mr-scope-b");
  testenv::ScopedNamespace c("mr-scope-c");
  FinalizerRelease release_a(a.name()), release_b(b.name()), release_c(c.name());
  for (const auto* ns : {&a, &b, &c})
    REQUIRE(testenv::kubectl_apply(myresource_manifest(ns->name(), "web", "nginx:1.27.1")).ok());

  {
    const std::size_t mark = audit_mark();
    OperatorProcess scoped(operator_options("myop-scope-ab", {a.name(), b.name()}, a.name()));
    scoped.start();
    REQUIRE(eventually([&] { return myresource_ready(a.name(), "web"); }, 120s));
    REQUIRE(eventually([&] { return myresource_ready(b.name(), "web"); }, 60s));
    // Whatever the operator was going to do, it has done: a stray reconcile of C would have shown.
    scoped.wait_until_settled();

    CHECK(jsonpath("myresource", c.name(), "web", "{.metadata.finalizers}").empty());
    CHECK(jsonpath("myresource", c.name(), "web", "{.status}").empty());
    CHECK(jsonpath("myresource", c.name(), "web", "{.metadata.name}") == "web");  // the reads above can fail
    CHECK(testenv::kubectl("get deployments -n " + c.name() + " -o name").output.find("deployment") ==
          std::string::npos);

    // A watch is logged when it ends (stage ResponseComplete): stop the operator first, then read
    // the log once its watches of A's MyResources and B's Deployments are in it.
    scoped.stop();
    std::vector<AuditEntry> entries, naming_c, cluster_wide, watch_a, watch_b;
    eventually(
        [&] {
          entries = audit_entries(scoped.user(), mark);
          naming_c.clear(), cluster_wide.clear(), watch_a.clear(), watch_b.clear();
          for (const auto& entry : entries) {
            if (entry.namespace_ == c.name() || (entry.resource == "namespaces" && entry.name == c.name()))
              naming_c.push_back(entry);
            if (entry.namespace_.empty() && is_list_or_watch(entry) && watched_type(entry))
              cluster_wide.push_back(entry);
            if (entry.namespace_ == a.name() && entry.verb == "watch" && entry.resource == "myresources")
              watch_a.push_back(entry);
            if (entry.namespace_ == b.name() && entry.verb == "watch" && entry.resource == "deployments")
              watch_b.push_back(entry);
          }
          return !watch_a.empty() && !watch_b.empty();
        },
        15s);
    INFO("the scoped operator's requests:\n" << describe(entries));
    CHECK(naming_c.empty());
    CHECK(cluster_wide.empty());
    CHECK_FALSE(watch_a.empty());  // its own namespaces' watches are in the log: the reading can fail
    CHECK_FALSE(watch_b.empty());
  }

  {
    // All namespaces: it also lists what other tests left in the cluster, so only C is asserted
    // on, and the operator runs no longer than needed.
    const std::size_t mark = audit_mark();
    OperatorProcess everywhere(operator_options("myop-scope-all", {}, a.name()));
    everywhere.start();
    REQUIRE(eventually([&] { return myresource_ready(c.name(), "web"); }, 120s));
    CHECK(jsonpath("myresource", c.name(), "web", "{.metadata.finalizers}").find(kOperatorFinalizer) !=
          std::string::npos);
    const std::string owner_uid = jsonpath("myresource", c.name(), "web", "{.metadata.uid}");
    CHECK_FALSE(owner_uid.empty());
    CHECK(jsonpath("deployment", c.name(), "web", "{.metadata.ownerReferences[?(@.controller==true)].uid}") ==
          owner_uid);

    std::vector<AuditEntry> cluster_wide_myresources;
    for (const auto& entry : audit_entries(everywhere.user(), mark))
      if (entry.namespace_.empty() && is_list_or_watch(entry) && entry.resource == "myresources")
        cluster_wide_myresources.push_back(entry);
    CHECK_FALSE(cluster_wide_myresources.empty());

    // Release the three objects while it runs, so no namespace is left Terminating.
    for (const auto* ns : {&a, &b, &c})
      testenv::kubectl_or_fail("delete myresource web -n " + ns->name() + " --wait=false");
    CHECK(eventually(
        [&] {
          for (const auto* ns : {&a, &b, &c})
            if (testenv::kubectl("get myresource web -n " + ns->name()).ok()) return false;
          return true;
        },
        120s));
    everywhere.stop();
  }
}
