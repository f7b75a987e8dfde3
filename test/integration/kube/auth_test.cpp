// Authentication and TLS against the real API server: client certificates, ServiceAccount tokens from
// TokenRequest, a token file rotated while the client runs, and TLS failures that must never pass.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <thread>

#include "kube/credentials.h"
#include "kube_test_support.h"
#include "support/testenv.h"

using namespace myop::kube;
using namespace myop::kube::testing;
using namespace std::chrono_literals;

namespace {

std::string trimmed(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ')) text.pop_back();
  return text;
}

// The admin's server and CA, without the admin's credentials.
ClientConfig anonymous_config() {
  ClientConfig config = admin_config();
  config.client_certificate_pem.clear();
  config.client_key_pem.clear();
  config.token.clear();
  config.token_file.clear();
  return config;
}

std::string create_token(const std::string& service_account, const std::string& namespace_name,
                         const std::string& extra = "") {
  return trimmed(myop::testenv::kubectl_or_fail("create token " + service_account + " -n " + namespace_name +
                                                " --duration=10m " + extra));
}

void write_file(const std::string& path, const std::string& content) {
  // Replace atomically, the way the kubelet updates a projected token.
  const std::string temporary = path + ".new";
  std::ofstream(temporary) << content;
  std::filesystem::rename(temporary, path);
}

}  // namespace

TEST_CASE("a client certificate authenticates its user", "[integration][kube][auth]") {
  myop::testenv::ScopedNamespace ns("kube-auth-cert");
  const auto certificate = myop::testenv::issue_client_certificate("myop-cert-user", {"myop-cert-group"});
  ClientConfig config = anonymous_config();
  config.client_certificate_pem = myop::testenv::read_file(certificate.certificate_path);
  config.client_key_pem = myop::testenv::read_file(certificate.key_path);
  Client client = client_for(config);

  auto name = who_am_i(client);
  INFO((name ? std::string() : name.error().to_string()));
  REQUIRE(name.ok());
  CHECK(name.value() == "myop-cert-user");

  // Authenticated but without RBAC rights: Forbidden, with the user in the message.
  auto forbidden = client.list(resources::config_maps(), ns.name());
  REQUIRE_FALSE(forbidden.ok());
  CHECK(forbidden.error().reason == Reason::Forbidden);
  CHECK(forbidden.error().message.find("myop-cert-user") != std::string::npos);

  myop::testenv::kubectl_or_fail(
      "create role configmap-reader --verb=get,list,watch --resource=configmaps -n " + ns.name());
  myop::testenv::kubectl_or_fail(
      "create rolebinding cert-reader --role=configmap-reader --user=myop-cert-user -n " + ns.name());
  bool allowed = false;
  for (int attempt = 0; attempt < 50 && !allowed; ++attempt) {
    allowed = client.list(resources::config_maps(), ns.name()).ok();
    if (!allowed) std::this_thread::sleep_for(100ms);
  }
  CHECK(allowed);
}

TEST_CASE("the same client certificate works from kubeconfig files", "[integration][kube][auth]") {
  const std::string kubeconfig = myop::testenv::kubeconfig_for_user("myop-file-user");
  ConfigSearch search;
  search.kubeconfig_path = kubeconfig;
  auto config = load_client_config(search);
  INFO((config ? std::string() : config.error().to_string()));
  REQUIRE(config.ok());
  Client client = client_for(config.value());
  auto name = who_am_i(client);
  REQUIRE(name.ok());
  CHECK(name.value() == "myop-file-user");
}

TEST_CASE("no credentials at all is anonymous, and anonymous is refused", "[integration][kube][auth]") {
  Client client = client_for(anonymous_config());
  auto listed = client.list(resources::namespaces(), "");
  REQUIRE_FALSE(listed.ok());
  // Depending on --anonymous-auth the server says 401 or 403 for system:anonymous.
  CHECK((listed.error().reason == Reason::Unauthorized || listed.error().reason == Reason::Forbidden));
}

TEST_CASE("a ServiceAccount token from TokenRequest authenticates the ServiceAccount",
          "[integration][kube][auth]") {
  myop::testenv::ScopedNamespace ns("kube-auth-sa");
  myop::testenv::kubectl_or_fail("create serviceaccount robot -n " + ns.name());
  ClientConfig config = anonymous_config();
  config.token = create_token("robot", ns.name());
  REQUIRE_FALSE(config.token.empty());
  Client client = client_for(config);
  auto name = who_am_i(client);
  INFO((name ? std::string() : name.error().to_string()));
  REQUIRE(name.ok());
  CHECK(name.value() == "system:serviceaccount:" + ns.name() + ":robot");

  ClientConfig wrong = anonymous_config();
  wrong.token = "not-a-token";
  Client rejected_client = client_for(wrong);
  auto rejected = who_am_i(rejected_client);
  REQUIRE_FALSE(rejected.ok());
  CHECK(rejected.error().reason == Reason::Unauthorized);
  CHECK(rejected.error().message.find("credentials") != std::string::npos);
}

TEST_CASE("a token file rotated while the client runs is picked up", "[integration][kube][auth]") {
  myop::testenv::ScopedNamespace ns("kube-auth-rotate");
  myop::testenv::kubectl_or_fail("create serviceaccount first -n " + ns.name());
  myop::testenv::kubectl_or_fail("create serviceaccount second -n " + ns.name());
  const std::string token_path = myop::testenv::binary_dir() + "/testenv/rotating-token-" + ns.name();
  write_file(token_path, create_token("first", ns.name()) + "\n");

  SECTION("on the periodic re-read") {
    ClientConfig config = anonymous_config();
    config.token_file = token_path;
    TransportOptions options;
    options.credentials = std::make_shared<TokenFileCredentialSource>(token_path, Credential{}, 1s);
    Client client = client_for(config, options);
    REQUIRE(who_am_i(client).value() == "system:serviceaccount:" + ns.name() + ":first");

    write_file(token_path, create_token("second", ns.name()));
    std::string seen;
    for (int attempt = 0; attempt < 40; ++attempt) {
      auto name = who_am_i(client);
      REQUIRE(name.ok());  // never a failed request during the rotation
      seen = name.value();
      if (seen.ends_with(":second")) break;
      std::this_thread::sleep_for(100ms);
    }
    CHECK(seen == "system:serviceaccount:" + ns.name() + ":second");
  }

  SECTION("at once when the old token is rejected, with the default one-minute interval") {
    // The first token is bound to a Secret: deleting the Secret revokes it.
    myop::testenv::kubectl_or_fail("create secret generic binding -n " + ns.name());
    write_file(token_path,
               create_token("first", ns.name(), "--bound-object-kind=Secret --bound-object-name=binding"));
    ClientConfig config = anonymous_config();
    config.token_file = token_path;
    auto metrics = std::make_shared<RecordingMetrics>();
    TransportOptions options;
    options.metrics = metrics;
    Client client = client_for(config, options);  // make_credential_source: 60 s re-read interval
    REQUIRE(who_am_i(client).value() == "system:serviceaccount:" + ns.name() + ":first");

    write_file(token_path, create_token("second", ns.name()));
    myop::testenv::kubectl_or_fail("delete secret binding -n " + ns.name());
    // The revocation takes effect once the authenticator's cache forgets the token (10 s at most).
    std::string seen;
    for (int attempt = 0; attempt < 60; ++attempt) {
      auto name = who_am_i(client);
      INFO((name ? std::string() : name.error().to_string()));
      REQUIRE(name.ok());
      seen = name.value();
      if (seen.ends_with(":second")) break;
      std::this_thread::sleep_for(500ms);
    }
    CHECK(seen == "system:serviceaccount:" + ns.name() + ":second");
    CHECK(metrics->count("401") >= 1);  // it really went through a rejection
  }
  std::filesystem::remove(token_path);
}

TEST_CASE("a wrong CA is a clear TLS error, never a silent success", "[integration][kube][auth][tls]") {
  const std::string directory = myop::testenv::binary_dir() + "/testenv";
  const std::string key = directory + "/wrong-ca.key";
  const std::string certificate = directory + "/wrong-ca.crt";
  auto made = myop::testenv::run(
      "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 "
      "-subj /CN=wrong-ca -keyout " +
      key + " -out " + certificate);
  INFO(made.output);
  REQUIRE(made.ok());

  ClientConfig config = admin_config();
  config.ca_pem = myop::testenv::read_file(certificate);
  config.ca_origin = "certificate-authority " + certificate;
  auto metrics = std::make_shared<RecordingMetrics>();
  TransportOptions options;
  options.metrics = metrics;
  Client client = client_for(config, options);
  auto result = client.list(resources::namespaces(), "");
  REQUIRE_FALSE(result.ok());
  const Error& error = result.error();
  INFO(error.to_string());
  CHECK(error.reason == Reason::Transport);
  CHECK(error.message.find("TLS handshake") != std::string::npos);
  CHECK(error.message.find("certificate") != std::string::npos);
  CHECK(error.message.find(certificate) != std::string::npos);
  // Verification fails the same way every time: one attempt, no retries until the deadline.
  CHECK(error.permanent);
  CHECK(metrics->count("<error>") == 1);

  std::filesystem::remove(key);
  std::filesystem::remove(certificate);
}

TEST_CASE("the system trust store is not used when a CA is configured", "[integration][kube][auth][tls]") {
  // The test CA is not in the system store, so "no CA" must fail too; this guards against a transport
  // that silently skips verification when the CA is missing.
  ClientConfig config = admin_config();
  config.ca_pem.clear();
  Client client = client_for(config);
  auto result = client.list(resources::namespaces(), "");
  REQUIRE_FALSE(result.ok());
  CHECK(result.error().reason == Reason::Transport);
}

TEST_CASE("the certificate must name the server, tls-server-name can choose the name",
          "[integration][kube][auth][tls]") {
  ClientConfig config = admin_config();
  // The test API server's certificate names kubernetes.default.svc among its SANs.
  config.tls_server_name = "kubernetes.default.svc";
  Client named = client_for(config);
  auto good = named.get(resources::namespaces(), "", "default");
  INFO((good ? std::string() : good.error().to_string()));
  CHECK(good.ok());

  config.tls_server_name = "wrong.example.com";
  Client misnamed = client_for(config);
  auto bad = misnamed.get(resources::namespaces(), "", "default");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().reason == Reason::Transport);
  CHECK(bad.error().permanent);
  CHECK(bad.error().message.find("wrong.example.com") != std::string::npos);
}

TEST_CASE("a client key that does not match its certificate is refused up front",
          "[integration][kube][auth][tls]") {
  const auto first = myop::testenv::issue_client_certificate("myop-mismatch-a");
  const auto second = myop::testenv::issue_client_certificate("myop-mismatch-b");
  ClientConfig config = anonymous_config();
  config.client_certificate_pem = myop::testenv::read_file(first.certificate_path);
  config.client_key_pem = myop::testenv::read_file(second.key_path);
  auto transport = make_https_transport(config);
  REQUIRE_FALSE(transport.ok());
  CHECK(transport.error().reason == Reason::InvalidConfiguration);
  INFO(transport.error().message);
  CHECK(transport.error().message.find("does not belong to the client certificate") != std::string::npos);
}

TEST_CASE("an exec plugin supplies the token", "[integration][kube][auth]") {
  myop::testenv::ScopedNamespace ns("kube-auth-exec");
  myop::testenv::kubectl_or_fail("create serviceaccount plugin-user -n " + ns.name());
  const std::string token = create_token("plugin-user", ns.name());
  const std::string script = myop::testenv::binary_dir() + "/testenv/exec-plugin-" + ns.name() + ".sh";
  {
    std::ofstream out(script);
    out << "#!/bin/sh\n"
           "case \"$KUBERNETES_EXEC_INFO\" in *client.authentication.k8s.io/v1*) ;; *) exit 7;; esac\n"
           "echo '{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\","
           "\"status\":{\"token\":\""
        << token << "\",\"expirationTimestamp\":\"2099-01-01T00:00:00Z\"}}'\n";
  }
  std::filesystem::permissions(script, std::filesystem::perms::owner_all);
  ClientConfig config = anonymous_config();
  config.exec = ExecConfig{};
  config.exec->command = script;
  Client client = client_for(config);
  auto name = who_am_i(client);
  INFO((name ? std::string() : name.error().to_string()));
  REQUIRE(name.ok());
  CHECK(name.value() == "system:serviceaccount:" + ns.name() + ":plugin-user");
  std::filesystem::remove(script);
}
