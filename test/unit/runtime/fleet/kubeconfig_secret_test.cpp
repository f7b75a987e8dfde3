#include "runtime/fleet/kubeconfig_secret.h"

#include <catch2/catch.hpp>

#include <string>

#include "base/base64.h"
#include "support/object_builder.h"

using myop::base::encode_base64;
using myop::runtime::fleet::read_kubeconfig_secret;
using myop::runtime::testing::make_object;

namespace {

const std::string kCaPem = "-----BEGIN CERTIFICATE-----\nMIIBfake\n-----END CERTIFICATE-----\n";

// A member's kubeconfig; `user` is the YAML of users[0].user.
std::string kubeconfig(const std::string& user, const std::string& cluster_extra = "") {
  return "apiVersion: v1\nkind: Config\ncurrent-context: member\nclusters:\n- name: c\n  cluster:\n"
         "    server: https://127.0.0.1:6443\n    certificate-authority-data: " +
         encode_base64(kCaPem) + "\n" + cluster_extra + "users:\n- name: u\n  user:\n" + user +
         "contexts:\n- name: member\n  context:\n    cluster: c\n    user: u\n";
}

std::string secret_json(const std::string& name, const std::string& data) {
  return R"({"apiVersion":"v1","kind":"Secret","metadata":{"namespace":"my-operator-system","name":")" +
         name + R"(","labels":{"sigs.k8s.io/multicluster-runtime-kubeconfig":"true"}},"data":)" + data + "}";
}

std::string secret_with(const std::string& name, const std::string& kubeconfig_text) {
  return secret_json(name, R"({"kubeconfig":")" + encode_base64(kubeconfig_text) + R"("})");
}

}  // namespace

TEST_CASE("a kubeconfig Secret names its cluster and resolves its credentials", "[runtime][fleet]") {
  const std::string text = kubeconfig("    token: member-token\n");
  auto secret = make_object(secret_with("eu-west", text));
  auto member = read_kubeconfig_secret(secret->view());
  REQUIRE(member.ok());
  CHECK(member->name == "eu-west");
  CHECK(member->config.server == "https://127.0.0.1:6443");
  CHECK(member->config.token == "member-token");
  CHECK(member->config.ca_pem == kCaPem);
  CHECK(member->digest.size() == 64);

  // Another token is another digest (a rotation); the same bytes are the same digest.
  auto rotated =
      read_kubeconfig_secret(make_object(secret_with("eu-west", kubeconfig("    token: t2\n")))->view());
  REQUIRE(rotated.ok());
  CHECK(rotated->digest != member->digest);
  CHECK(read_kubeconfig_secret(make_object(secret_with("x", text))->view())->digest == member->digest);
}

TEST_CASE("a kubeconfig Secret that cannot be used is an error naming the Secret and the field",
          "[runtime][fleet]") {
  struct Case {
    std::string secret;
    std::string expected;
  };
  const auto bad = GENERATE(
      Case{secret_json("a", R"({"other":"eA=="})"),
           "Secret my-operator-system/a: data.kubeconfig is missing"},
      Case{secret_json("b", R"({"kubeconfig":"%%%"})"),
           "Secret my-operator-system/b: data.kubeconfig is not valid base64"},
      Case{secret_json("c", R"({"kubeconfig":""})"), "Secret my-operator-system/c: data.kubeconfig is empty"},
      Case{secret_json("d", R"({"kubeconfig":7})"),
           "Secret my-operator-system/d: data.kubeconfig is not a string"},
      Case{secret_with("e", "clusters: [unclosed"), "Secret my-operator-system/e data.kubeconfig"},
      Case{secret_with("f",
                       kubeconfig("    tokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token\n")),
           "users[name=u].user.tokenFile is refused"},
      Case{secret_with("g",
                       kubeconfig("    client-certificate: /etc/ssl/private/cert.pem\n    client-key: /k\n")),
           "users[name=u].user.client-certificate is refused"},
      Case{secret_with("h", kubeconfig("    exec:\n      apiVersion: client.authentication.k8s.io/v1\n"
                                       "      command: /bin/sh\n      args: [\"-c\", \"id\"]\n")),
           "users[name=u].user.exec is refused"},
      Case{secret_with(
               "i",
               "apiVersion: v1\nkind: Config\ncurrent-context: member\nclusters:\n- name: c\n"
               "  cluster:\n    server: https://127.0.0.1:6443\n    certificate-authority: /etc/ca.pem\n"
               "users:\n- name: u\n  user:\n    token: t\ncontexts:\n- name: member\n  context:\n"
               "    cluster: c\n    user: u\n"),
           "clusters[name=c].cluster.certificate-authority is refused"},
      Case{secret_with("j", "apiVersion: v1\nkind: Config\nclusters: []\n"), "current-context"});
  auto member = read_kubeconfig_secret(make_object(bad.secret)->view());
  REQUIRE_FALSE(member.ok());
  INFO(member.error().message);
  CHECK(member.error().reason == myop::kube::Reason::InvalidConfiguration);
  CHECK(member.error().message.find(bad.expected) != std::string::npos);
}
