#include "app/options.h"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

using namespace myop::app;

namespace {

std::variant<Options, int> parse(std::vector<std::string> arguments) {
  arguments.insert(arguments.begin(), "my-operator");
  std::vector<char*> argv;
  argv.reserve(arguments.size());
  for (auto& argument : arguments) argv.push_back(argument.data());
  return parse_options(static_cast<int>(argv.size()), argv.data());
}

}  // namespace

TEST_CASE("tracing flags: off by default, an endpoint and a ratio from 0 to 1", "[app][options][trace]") {
  const auto defaults = parse({});
  REQUIRE(std::holds_alternative<Options>(defaults));
  CHECK(std::get<Options>(defaults).otlp_endpoint.empty());
  CHECK(std::get<Options>(defaults).trace_sampling_ratio == 1.0);

  const auto set = parse({"--otlp-endpoint", "http://otel-collector:4318", "--trace-sampling-ratio", "0.1"});
  REQUIRE(std::holds_alternative<Options>(set));
  CHECK(std::get<Options>(set).otlp_endpoint == "http://otel-collector:4318");
  CHECK(std::get<Options>(set).trace_sampling_ratio == 0.1);

  // Refused with a message on stderr and a non-zero exit code.
  CHECK(std::get<int>(parse({"--trace-sampling-ratio", "1.5"})) != 0);
  CHECK(std::get<int>(parse({"--trace-sampling-ratio", "-0.1"})) != 0);
  CHECK(std::get<int>(parse({"--otlp-endpoint", "otel-collector:4318"})) != 0);
  CHECK(std::get<int>(parse({"--otlp-endpoint", "grpc://otel-collector:4317"})) != 0);
}

TEST_CASE(
    "the watch stall timeout (--watch-stall-timeout) is 90 s by default and never below the bookmark "
    "interval",
    "[app][options]") {
  const auto defaults = parse({});
  REQUIRE(std::holds_alternative<Options>(defaults));
  CHECK(std::get<Options>(defaults).watch_stall_timeout == std::chrono::seconds(90));

  const auto set = parse({"--watch-stall-timeout", "2m"});
  REQUIRE(std::holds_alternative<Options>(set));
  CHECK(std::get<Options>(set).watch_stall_timeout == std::chrono::seconds(120));

  // A timeout under a minute would cut every quiet healthy watch between two bookmarks.
  CHECK(std::get<int>(parse({"--watch-stall-timeout", "30s"})) != 0);
}

TEST_CASE("webhook flags: off by default, names and CRDs as lists, validities checked",
          "[app][options][webhook]") {
  const auto defaults = parse({});
  REQUIRE(std::holds_alternative<Options>(defaults));
  const auto& off = std::get<Options>(defaults);
  CHECK(off.webhook_bind_address == "0");
  CHECK(off.webhook_secret == "my-operator-webhook-cert");
  CHECK(off.webhook_ca_secret.empty());  // <webhook-secret>-ca
  CHECK(off.webhook_cert_check_interval == std::chrono::minutes(1));
  CHECK(off.webhook_crds == std::vector<std::string>{"myresources.myorg.io"});
  CHECK(off.webhook_cert_validity == std::chrono::hours(8760));
  CHECK(off.webhook_ca_validity == std::chrono::hours(87600));

  const auto set = parse({"--webhook-bind-address", "127.0.0.1:9443", "--webhook-cert-names",
                          "127.0.0.1, ::1", "--webhook-crds", "a.example.com,b.example.com",
                          "--webhook-cert-validity", "90s", "--webhook-ca-validity", "10m",
                          "--webhook-ca-secret", "webhook-ca", "--webhook-cert-check-interval", "1s"});
  REQUIRE(std::holds_alternative<Options>(set));
  const auto& on = std::get<Options>(set);
  CHECK(on.webhook_bind_address == "127.0.0.1:9443");
  CHECK(on.webhook_cert_names == std::vector<std::string>{"127.0.0.1", "::1"});
  CHECK(on.webhook_crds == std::vector<std::string>{"a.example.com", "b.example.com"});
  CHECK(on.webhook_cert_validity == std::chrono::seconds(90));
  CHECK(on.webhook_ca_validity == std::chrono::minutes(10));
  CHECK(on.webhook_ca_secret == "webhook-ca");
  CHECK(on.webhook_cert_check_interval == std::chrono::seconds(1));

  // The CA signs the certificate: it cannot outlive it.
  CHECK(std::get<int>(parse({"--webhook-cert-validity", "2h", "--webhook-ca-validity", "1h"})) != 0);
  CHECK(std::get<int>(parse({"--webhook-cert-validity", "0s"})) != 0);
  CHECK(std::get<int>(parse({"--webhook-ca-validity", "forever"})) != 0);
  CHECK(std::get<int>(parse({"--webhook-cert-check-interval", "0s"})) != 0);
}

TEST_CASE("storage migration flags: on by default at 20 writes a second, off with false, a rate above 0",
          "[app][options][storage-migration]") {
  const auto defaults = parse({});
  REQUIRE(std::holds_alternative<Options>(defaults));
  CHECK(std::get<Options>(defaults).migrate_storage);
  CHECK(std::get<Options>(defaults).storage_migration_qps == 20);
  const auto off = parse({"--migrate-storage=false", "--storage-migration-qps", "5.5"});
  REQUIRE(std::holds_alternative<Options>(off));
  CHECK_FALSE(std::get<Options>(off).migrate_storage);
  CHECK(std::get<Options>(off).storage_migration_qps == 5.5);
  CHECK(std::get<int>(parse({"--storage-migration-qps", "0"})) != 0);
  CHECK(std::get<int>(parse({"--migrate-storage", "perhaps"})) != 0);
}

TEST_CASE(
    "storage migration intervals: the CRD read every 10 minutes, a retry after 30 s, both durations of 1s or "
    "more",
    "[app][options][storage-migration]") {
  const auto defaults = parse({});
  REQUIRE(std::holds_alternative<Options>(defaults));
  CHECK(std::get<Options>(defaults).storage_migration_interval == std::chrono::minutes(10));
  CHECK(std::get<Options>(defaults).storage_migration_retry_interval == std::chrono::seconds(30));
  const auto fast = parse({"--storage-migration-interval", "1s", "--storage-migration-retry-interval", "2s"});
  REQUIRE(std::holds_alternative<Options>(fast));
  CHECK(std::get<Options>(fast).storage_migration_interval == std::chrono::seconds(1));
  CHECK(std::get<Options>(fast).storage_migration_retry_interval == std::chrono::seconds(2));
  CHECK(std::get<int>(parse({"--storage-migration-interval", "0s"})) != 0);
  CHECK(std::get<int>(parse({"--storage-migration-retry-interval", "soon"})) != 0);
}

TEST_CASE("webhook only: off by default, needs the webhook's address, refuses leader election and sharding",
          "[app][options][webhook]") {
  const auto defaults = parse({});
  REQUIRE(std::holds_alternative<Options>(defaults));
  CHECK_FALSE(std::get<Options>(defaults).webhook_only);
  const auto only = parse({"--webhook-only", "--webhook-bind-address", "127.0.0.1:9443"});
  REQUIRE(std::holds_alternative<Options>(only));
  CHECK(std::get<Options>(only).webhook_only);
  CHECK(std::get<int>(parse({"--webhook-only"})) != 0);
  CHECK(std::get<int>(parse({"--webhook-only", "--webhook-bind-address", "0"})) != 0);
  CHECK(std::get<int>(parse({"--webhook-only", "--webhook-bind-address", ":9443", "--leader-elect"})) != 0);
  CHECK(std::get<int>(parse({"--webhook-only", "--webhook-bind-address", ":9443", "--sharding"})) != 0);
}

TEST_CASE("webhook CRDs: an empty --webhook-crds= keeps no CRD and does not take the next flag as its value",
          "[app][options][webhook]") {
  const auto none = parse({"--webhook-crds=", "--webhook-service", "other"});
  REQUIRE(std::holds_alternative<Options>(none));
  CHECK(std::get<Options>(none).webhook_crds.empty());
  CHECK(std::get<Options>(none).webhook_service == "other");
  const auto defaults = parse({});
  REQUIRE(std::holds_alternative<Options>(defaults));
  CHECK(std::get<Options>(defaults).webhook_crds == std::vector<std::string>{"myresources.myorg.io"});
}

TEST_CASE("the webhook's request limit: 8 MiB by default, in bytes or with a suffix, from 64 KiB to 1 GiB",
          "[app][options][webhook]") {
  const auto defaults = parse({});
  REQUIRE(std::holds_alternative<Options>(defaults));
  CHECK(std::get<Options>(defaults).webhook_max_request_bytes == 8U << 20U);
  const auto mebibytes = parse({"--webhook-max-request-bytes", "16Mi"});
  REQUIRE(std::holds_alternative<Options>(mebibytes));
  CHECK(std::get<Options>(mebibytes).webhook_max_request_bytes == 16U << 20U);
  const auto bytes = parse({"--webhook-max-request-bytes", "100000"});
  REQUIRE(std::holds_alternative<Options>(bytes));
  CHECK(std::get<Options>(bytes).webhook_max_request_bytes == 100000);
  CHECK(std::get<int>(parse({"--webhook-max-request-bytes", "1Ki"})) != 0);
  CHECK(std::get<int>(parse({"--webhook-max-request-bytes", "2Gi"})) != 0);
  CHECK(std::get<int>(parse({"--webhook-max-request-bytes", "lots"})) != 0);
}
