#include "runtime/fleet/membership.h"

#include <catch2/catch.hpp>

#include <string>

#include "base/base64.h"
#include "support/object_builder.h"

using myop::base::encode_base64;
using myop::runtime::fleet::Membership;
using myop::runtime::fleet::MembershipChange;
using myop::runtime::testing::make_object;
using Kind = MembershipChange::Kind;

namespace {

std::string secret(const std::string& name, const std::string& token) {
  const std::string kubeconfig =
      "apiVersion: v1\nkind: Config\ncurrent-context: m\nclusters:\n- name: c\n  cluster:\n"
      "    server: https://127.0.0.1:6443\nusers:\n- name: u\n  user:\n    token: " +
      token + "\ncontexts:\n- name: m\n  context:\n    cluster: c\n    user: u\n";
  return R"({"apiVersion":"v1","kind":"Secret","metadata":{"namespace":"ops","name":")" + name +
         R"("},"data":{"kubeconfig":")" + encode_base64(kubeconfig) + R"("}})";
}

std::string broken(const std::string& name) {
  return R"({"apiVersion":"v1","kind":"Secret","metadata":{"namespace":"ops","name":")" + name +
         R"("},"data":{"kubeconfig":"bm90IHlhbWw6IFs="}})";  // "not yaml: ["
}

std::vector<MembershipChange> observe(Membership& membership, const std::string& json) {
  return membership.observe(make_object(json)->view());
}

}  // namespace

TEST_CASE("a Secret engages its cluster once, and the same bytes again change nothing", "[runtime][fleet]") {
  Membership membership;
  auto changes = observe(membership, secret("east", "t1"));
  REQUIRE(changes.size() == 1);
  CHECK(changes[0].kind == Kind::engage);
  CHECK(changes[0].name == "east");
  REQUIRE(changes[0].source);
  CHECK(changes[0].source->config.token == "t1");
  const auto east = changes[0].id;
  CHECK(east != myop::runtime::kLocalCluster);
  CHECK(membership.engaged("east") == east);
  CHECK(membership.name_of(east) == "east");

  CHECK(observe(membership, secret("east", "t1")).empty());  // a resync or relist

  auto west = observe(membership, secret("west", "t9"));
  REQUIRE(west.size() == 1);
  CHECK(west[0].id != east);
  CHECK(membership.engaged_count() == 2);
}

TEST_CASE("a rotated Secret stops the old cluster id and starts a new one", "[runtime][fleet]") {
  Membership membership;
  const auto first = observe(membership, secret("east", "t1")).at(0).id;
  auto changes = observe(membership, secret("east", "t2"));
  REQUIRE(changes.size() == 2);
  CHECK(changes[0].kind == Kind::disengage);
  CHECK(changes[0].id == first);
  CHECK(changes[1].kind == Kind::engage);
  CHECK(changes[1].id != first);
  CHECK(changes[1].source->config.token == "t2");
  CHECK(membership.engaged("east") == changes[1].id);
  CHECK_FALSE(membership.name_of(first));
}

TEST_CASE("a broken Secret is refused alone, and stops the cluster it described before", "[runtime][fleet]") {
  Membership membership;
  observe(membership, secret("west", "w"));
  const auto east = observe(membership, secret("east", "t1")).at(0).id;
  auto changes = observe(membership, broken("east"));
  REQUIRE(changes.size() == 2);
  CHECK(changes[0].kind == Kind::disengage);
  CHECK(changes[0].id == east);
  CHECK(changes[1].kind == Kind::refuse);
  CHECK(changes[1].problem.find("Secret ops/east data.kubeconfig") != std::string::npos);
  CHECK_FALSE(membership.engaged("east"));
  CHECK(membership.engaged("west"));  // the other member is untouched

  CHECK(observe(membership, broken("east")).empty());  // refused once, not on every resync
  auto fixed = observe(membership, secret("east", "t3"));
  REQUIRE(fixed.size() == 1);
  CHECK(fixed[0].kind == Kind::engage);
}

TEST_CASE("a deleted Secret disengages its cluster", "[runtime][fleet]") {
  Membership membership;
  const auto east = observe(membership, secret("east", "t1")).at(0).id;
  auto changes = membership.remove("east");
  REQUIRE(changes.size() == 1);
  CHECK(changes[0].kind == Kind::disengage);
  CHECK(changes[0].id == east);
  CHECK(membership.engaged_count() == 0);
  CHECK(membership.remove("east").empty());
  observe(membership, broken("west"));
  CHECK(membership.remove("west").empty());  // refused: nothing was engaged
}

TEST_CASE("any source of members shares the ids: a ClusterProfile's member beside a Secret's",
          "[runtime][fleet]") {
  Membership membership;
  const auto secret_id = observe(membership, secret("east", "t1")).at(0).id;
  int reads = 0;
  const auto read = [&reads] {
    ++reads;
    myop::kube::ClientConfig config;
    config.server = "https://10.0.0.1:6443";
    return myop::kube::Result<myop::runtime::fleet::MemberSource>(
        myop::runtime::fleet::MemberSource{"fleet-system/east", "d1", config});
  };
  auto changes = membership.observe("fleet-system/east", "d1", read);
  REQUIRE(changes.size() == 1);
  CHECK(changes[0].kind == Kind::engage);
  CHECK(changes[0].id != secret_id);  // one counter for every source: ids never collide
  CHECK(membership.observe("fleet-system/east", "d1", read).empty());
  CHECK(reads == 1);  // the same digest is not read again
  CHECK(membership.engaged_count() == 2);
  CHECK(membership.remove("fleet-system/east").at(0).kind == Kind::disengage);
  CHECK(membership.engaged("east"));
}
