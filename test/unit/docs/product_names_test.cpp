// runtime/ and trace/ know no product (docs/architecture.md, "The layers"): no string literal of their
// code names my-operator or its API group, the names that say who acts come from app/, and the
// components refuse to run without them.
#include <catch2/catch.hpp>

#include <cctype>
#include <chrono>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "kube/client.h"
#include "kube/resource.h"
#include "packaging/packaging_files.h"
#include "runtime/certificates/webhook_certificate_renewal.h"
#include "runtime/certificates/webhook_certificates.h"
#include "runtime/migration/storage_migration.h"
#include "support/in_memory_api_server.h"
#include "trace/otlp_http_exporter.h"

using namespace myop;

namespace {

// The string literals of C++ source text (comments skipped; raw strings included).
std::vector<std::string> string_literals(const std::string& text) {
  std::vector<std::string> literals;
  std::size_t i = 0;
  const auto identifier = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_'; };
  while (i < text.size()) {
    if (text.compare(i, 2, "//") == 0) {
      i = text.find('\n', i);
      if (i == std::string::npos) break;
    } else if (text.compare(i, 2, "/*") == 0) {
      i = text.find("*/", i + 2);
      if (i == std::string::npos) break;
      i += 2;
    } else if (text[i] == '\'') {
      // A character literal ('"' must not open a string), or a digit separator (1'000).
      if (i > 0 && std::isdigit(static_cast<unsigned char>(text[i - 1])) != 0) {
        ++i;
        continue;
      }
      for (++i; i < text.size() && text[i] != '\''; ++i)
        if (text[i] == '\\') ++i;
      ++i;
    } else if (text[i] == '"' && i > 0 && text[i - 1] == 'R' && (i < 2 || !identifier(text[i - 2]))) {
      const std::size_t open = text.find('(', i);
      const std::string close = ")" + text.substr(i + 1, open - i - 1) + "\"";
      const std::size_t end = text.find(close, open);
      literals.push_back(text.substr(open + 1, end - open - 1));
      i = end + close.size();
    } else if (text[i] == '"') {
      std::string literal;
      for (++i; i < text.size() && text[i] != '"'; ++i) {
        if (text[i] == '\\') literal += text[i++];
        literal += text[i];
      }
      literals.push_back(literal);
      ++i;
    } else {
      ++i;
    }
  }
  return literals;
}

std::shared_ptr<kube::Client> a_client() {
  auto server = std::make_shared<testing::InMemoryApiServer>();
  return std::make_shared<kube::Client>(server->transport("test"), "test-operator");
}

runtime::WebhookCertificateManagerOptions named_certificate_options(std::shared_ptr<kube::Client> client) {
  runtime::WebhookCertificateManagerOptions options;
  options.client = std::move(client);
  options.secret_namespace = "ops";
  options.secret_name = "webhook-cert";
  options.service_name = "webhook";
  options.settings.names = {"webhook.ops.svc"};
  options.managed_by = "test-operator";
  options.settings.organization = "test-operator";
  options.settings.ca_name = "test-operator-webhook-ca";
  return options;
}

}  // namespace

TEST_CASE("docs: the code of runtime/ and trace/ names no product in its strings", "[docs][architecture]") {
  // The scanner finds literals, and not those of comments.
  CHECK(string_literals("a = \"x\"; // \"my-operator\"\n/* \"y\" */ b = R\"d(q\"z)d\"; c = '\"';") ==
        std::vector<std::string>{"x", "q\"z"});

  const auto root = packaging::repository_root();
  std::size_t files = 0;
  for (const char* layer : {"src/runtime", "src/trace"}) {
    for (const auto& entry : std::filesystem::recursive_directory_iterator(root / layer)) {
      const auto extension = entry.path().extension();
      if (!entry.is_regular_file() || (extension != ".h" && extension != ".cpp")) continue;
      ++files;
      for (const std::string& literal : string_literals(packaging::read_text(entry.path()))) {
        INFO(entry.path().lexically_relative(root).string()
             << ": \"" << literal << "\" names the product: take it from the options, set by app/");
        CHECK(literal.find("my-operator") == std::string::npos);
        CHECK(literal.find("myorg") == std::string::npos);
      }
    }
  }
  CHECK(files > 50);
}

TEST_CASE("docs: runtime/ and trace/ refuse to act without the names app/ gives them",
          "[docs][architecture]") {
  SECTION("the storage migration's field manager") {
    runtime::StorageVersionMigratorOptions options;
    options.client = a_client();
    options.crd_name = "things.example.com";
    CHECK_THROWS_AS(runtime::StorageVersionMigrator(options), std::invalid_argument);
    options.field_manager = "test-operator-storage-migration";
    CHECK_NOTHROW(runtime::StorageVersionMigrator(options));
  }
  SECTION("the webhook certificates' managed-by label, organization and CA name") {
    const auto client = a_client();
    CHECK_NOTHROW(runtime::WebhookCertificateManager(named_certificate_options(client)));
    auto options = named_certificate_options(client);
    options.managed_by.clear();
    CHECK_THROWS_AS(runtime::WebhookCertificateManager(options), std::invalid_argument);
    options = named_certificate_options(client);
    options.settings.organization.clear();
    CHECK_THROWS_AS(runtime::WebhookCertificateManager(options), std::invalid_argument);
    options = named_certificate_options(client);
    options.settings.ca_name.clear();
    CHECK_THROWS_AS(runtime::WebhookCertificateManager(options), std::invalid_argument);
    CHECK_THROWS_AS(runtime::renew_certificates(nullptr, {runtime::RenewalPlan::Kind::Authority, "test", {}},
                                                options.settings, std::chrono::system_clock::now()),
                    std::invalid_argument);
  }
  SECTION("the trace exporter's service and tracer names") {
    trace::OtlpHttpOptions options;
    options.endpoint = "http://127.0.0.1:4318";
    options.resource = {"", "1.0", "test-operator/trace"};
    CHECK_THROWS_AS(trace::make_otlp_http_exporter(options), std::invalid_argument);
    options.resource = {"test-operator", "1.0", ""};
    CHECK_THROWS_AS(trace::make_otlp_http_exporter(options), std::invalid_argument);
  }
}

TEST_CASE("docs: the webhook certificates' Secrets carry the managed-by value app/ gives",
          "[docs][architecture]") {
  auto server = std::make_shared<testing::InMemoryApiServer>();
  auto options = named_certificate_options(std::make_shared<kube::Client>(server->transport("test"), "test"));
  options.managed_by = "some-operator";
  runtime::WebhookCertificateManager certificates(options);
  const auto checked = certificates.check();
  INFO((checked ? "" : checked.error().message));
  REQUIRE(checked.ok());
  for (const char* name : {"webhook-cert", "webhook-cert-ca"}) {
    const auto secret = server->object(kube::object_path(kube::resources::secrets(), "ops", name));
    INFO(name);
    CHECK(secret.view().label("app.kubernetes.io/managed-by") == "some-operator");
  }
}
