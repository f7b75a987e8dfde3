// ClusterProfiles and the operator's access provider file (runtime/fleet/cluster_profile.h): the first
// configured provider of a profile gives its member's server, CA and exec plugin; what the profile
// cannot choose (the command, extra arguments) stays the operator's; what cannot be used is refused,
// naming the field.
#include "runtime/fleet/cluster_profile.h"

#include <catch2/catch.hpp>

#include <string>

#include "base/base64.h"
#include "support/object_builder.h"

using myop::base::encode_base64;
using namespace myop::runtime::fleet;
using myop::runtime::testing::make_object;

namespace {

const std::string kCaPem = "-----BEGIN CERTIFICATE-----\nMIIBfake\n-----END CERTIFICATE-----\n";

const char* kProviders = R"({"providers": [
  {"name": "token-reader", "execConfig": {"apiVersion": "client.authentication.k8s.io/v1",
    "command": "/usr/local/bin/token-reader", "args": ["--audience", "fleet"],
    "env": [{"name": "MODE", "value": "hub"}], "provideClusterInfo": true}},
  {"name": "other", "execConfig": {"command": "other-plugin"}}]})";

// A ClusterProfile in fleet-system whose status lists `providers` (JSON array) as accessProviders.
std::string profile_json(const std::string& name, const std::string& providers,
                         const std::string& list = "accessProviders") {
  return R"({"apiVersion":"multicluster.x-k8s.io/v1alpha1","kind":"ClusterProfile","metadata":{"namespace":"fleet-system","name":")" +
         name + R"("},"spec":{"displayName":")" + name +
         R"(","clusterManager":{"name":"test"}},"status":{")" + list + R"(":)" + providers + "}}";
}

std::string provider_entry(const std::string& name, const std::string& cluster_extra = "") {
  return R"({"name":")" + name +
         R"(","cluster":{"server":"https://10.0.0.1:6443","certificate-authority-data":")" +
         encode_base64(kCaPem) + "\"" + cluster_extra + "}}";
}

std::vector<AccessProvider> providers() {
  auto parsed = parse_access_providers(kProviders, "providers.json");
  REQUIRE(parsed.ok());
  return std::move(parsed).value();
}

}  // namespace

TEST_CASE("the access provider file gives each provider its exec plugin", "[runtime][fleet]") {
  const auto parsed = providers();
  REQUIRE(parsed.size() == 2);
  CHECK(parsed[0].name == "token-reader");
  CHECK(parsed[0].exec.command == "/usr/local/bin/token-reader");
  CHECK(parsed[0].exec.args == std::vector<std::string>{"--audience", "fleet"});
  CHECK(parsed[0].exec.env == std::vector<std::pair<std::string, std::string>>{{"MODE", "hub"}});
  CHECK(parsed[0].exec.provide_cluster_info);
  CHECK(parsed[0].exec.interactive_mode == "Never");
  CHECK(parsed[1].exec.api_version == "client.authentication.k8s.io/v1");

  const auto refused = [](const std::string& json) {
    auto result = parse_access_providers(json, "providers.json");
    REQUIRE_FALSE(result.ok());
    return result.error();
  };
  CHECK(refused("{}") == "providers.json: no \"providers\" list");
  CHECK(refused("not json").rfind("providers.json: invalid JSON", 0) == 0);
  CHECK(refused(R"({"providers":[{"execConfig":{"command":"x"}}]})") ==
        "providers.json: providers[0].name is empty");
  CHECK(refused(R"({"providers":[{"name":"a"}]})") == "providers.json: providers[0].execConfig is missing");
  CHECK(refused(R"({"providers":[{"name":"a","execConfig":{}}]})") ==
        "providers.json: providers[0].execConfig.command is empty");
  CHECK(
      refused(
          R"({"providers":[{"name":"a","execConfig":{"command":"x"}},{"name":"a","execConfig":{"command":"y"}}]})") ==
      "providers.json: providers[1].name a is given twice");
}

TEST_CASE("a ClusterProfile's first configured access provider gives its member", "[runtime][fleet]") {
  // The first entry names a provider the operator does not have; the second is ours.
  auto profile = make_object(
      profile_json("eu-west", "[" + provider_entry("unknown") + "," + provider_entry("token-reader") + "]"));
  auto member = read_cluster_profile(profile->view(), providers());
  REQUIRE(member.ok());
  CHECK(member->name == "fleet-system/eu-west");
  CHECK(member->config.server == "https://10.0.0.1:6443");
  CHECK(member->config.ca_pem == kCaPem);
  REQUIRE(member->config.exec);
  CHECK(member->config.exec->command == "/usr/local/bin/token-reader");
  CHECK(member->config.token.empty());
  CHECK(member->digest.size() == 64);

  // The deprecated credentialProviders are read too.
  auto deprecated =
      make_object(profile_json("eu-west", "[" + provider_entry("token-reader") + "]", "credentialProviders"));
  CHECK(read_cluster_profile(deprecated->view(), providers()).ok());

  // Another server is another digest; the profile's other fields are not in it.
  auto moved = make_object(
      profile_json("eu-west", "[" + provider_entry("unknown") + "," +
                                  provider_entry("token-reader", R"(,"tls-server-name":"api")") + "]"));
  CHECK(read_cluster_profile(moved->view(), providers())->digest != member->digest);
}

TEST_CASE("a ClusterProfile that cannot be used is refused, naming the field", "[runtime][fleet]") {
  const auto refused = [](const std::string& providers_json) {
    auto result =
        read_cluster_profile(make_object(profile_json("eu-west", providers_json))->view(), providers());
    REQUIRE_FALSE(result.ok());
    CHECK(result.error().reason == myop::kube::Reason::InvalidConfiguration);
    return result.error().message;
  };
  CHECK(refused("[]") == "ClusterProfile fleet-system/eu-west: status.accessProviders is empty");
  CHECK(refused("[" + provider_entry("unknown") + "]") ==
        "ClusterProfile fleet-system/eu-west: none of its access providers (unknown) is configured in the "
        "operator's provider file");
  CHECK(refused("[" + provider_entry("token-reader", R"(,"insecure-skip-tls-verify":true)") + "]") ==
        "ClusterProfile fleet-system/eu-west: status.accessProviders[0].cluster.insecure-skip-tls-verify is "
        "refused: the server is always verified");
  CHECK(refused("[" + provider_entry("token-reader", R"(,"proxy-url":"http://proxy:3128")") + "]") ==
        "ClusterProfile fleet-system/eu-west: status.accessProviders[0].cluster.proxy-url is not supported");
  CHECK(refused(R"([{"name":"token-reader","cluster":{"server":"http://10.0.0.1"}}])") ==
        "ClusterProfile fleet-system/eu-west: status.accessProviders[0].cluster.server 'http://10.0.0.1' is "
        "not "
        "an https:// URL");
}
