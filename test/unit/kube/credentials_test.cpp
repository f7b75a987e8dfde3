#include "kube/credentials.h"

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <random>

namespace fs = std::filesystem;
using namespace myop::kube;
using namespace std::chrono_literals;

namespace {

std::string temp_file(const std::string& content) {
  std::random_device random;
  const auto path = fs::temp_directory_path() / ("myop-token-" + std::to_string(random()));
  std::ofstream(path) << content;
  return path.string();
}

std::string exec_credential(const std::string& token, const std::string& expiry = "") {
  std::string status = R"("token":")" + token + "\"";
  if (!expiry.empty()) status += R"(,"expirationTimestamp":")" + expiry + "\"";
  return R"({"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{)" + status +
         "}}";
}

std::string rfc3339(std::chrono::system_clock::time_point time) {
  const std::time_t seconds = std::chrono::system_clock::to_time_t(time);
  std::tm parts{};
  gmtime_r(&seconds, &parts);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &parts);
  return text;
}

}  // namespace

TEST_CASE("a token file is re-read after the refresh interval and its last good token kept",
          "[kube][credentials]") {
  const std::string path = temp_file("first-token\n");
  TokenFileCredentialSource::Clock::time_point now{};
  TokenFileCredentialSource source(path, {}, 60s, [&] { return now; });

  REQUIRE(source.current().ok());
  CHECK(source.current()->bearer_token == "first-token");

  std::ofstream(path) << "second-token";
  now += 30s;
  CHECK(source.current()->bearer_token == "first-token");  // not yet a minute
  now += 31s;
  CHECK(source.current()->bearer_token == "second-token");

  SECTION("a vanished file keeps the last good token") {
    fs::remove(path);
    now += 61s;
    auto credential = source.current();
    REQUIRE(credential.ok());
    CHECK(credential->bearer_token == "second-token");
  }
  SECTION("an empty file keeps the last good token") {
    std::ofstream(path) << "";
    now += 61s;
    CHECK(source.current()->bearer_token == "second-token");
  }
  SECTION("a 401 makes the next request re-read at once") {
    std::ofstream(path) << "third-token";
    Credential rejected;
    rejected.bearer_token = "second-token";
    source.unauthorized(rejected);
    CHECK(source.current()->bearer_token == "third-token");
  }
  fs::remove(path);
}

TEST_CASE("a token file that cannot be read at first is an Unauthorized error naming it",
          "[kube][credentials]") {
  TokenFileCredentialSource source("/nonexistent/token");
  auto credential = source.current();
  REQUIRE_FALSE(credential.ok());
  CHECK(credential.error().reason == Reason::Unauthorized);
  CHECK(credential.error().message.find("/nonexistent/token") != std::string::npos);
}

TEST_CASE("ExecCredential output is parsed", "[kube][credentials]") {
  auto parsed = parse_exec_credential(exec_credential("abc", "2030-01-02T03:04:05Z"), "plugin",
                                      "client.authentication.k8s.io/v1");
  REQUIRE(parsed.ok());
  CHECK(parsed->bearer_token == "abc");
  REQUIRE(parsed->expiry.has_value());
  CHECK(std::chrono::system_clock::to_time_t(*parsed->expiry) == 1893553445);

  auto with_offset = parse_exec_credential(exec_credential("abc", "2030-01-02T05:04:05.123+02:00"), "plugin",
                                           "client.authentication.k8s.io/v1");
  REQUIRE(with_offset.ok());
  CHECK(std::chrono::system_clock::to_time_t(*with_offset->expiry) == 1893553445);

  auto certificate = parse_exec_credential(
      R"({"apiVersion":"client.authentication.k8s.io/v1beta1","kind":"ExecCredential","status":{"clientCertificateData":"C","clientKeyData":"K"}})",
      "plugin", "client.authentication.k8s.io/v1beta1");
  REQUIRE(certificate.ok());
  CHECK(certificate->client_certificate_pem == "C");
  CHECK(certificate->client_key_pem == "K");
  CHECK_FALSE(certificate->expiry.has_value());
}

TEST_CASE("bad ExecCredential output names the plugin and the problem", "[kube][credentials]") {
  const std::string v1 = "client.authentication.k8s.io/v1";
  auto message_of = [&](const std::string& json) {
    auto parsed = parse_exec_credential(json, "my-plugin", v1);
    REQUIRE_FALSE(parsed.ok());
    CHECK(parsed.error().message.find("my-plugin") != std::string::npos);
    return parsed.error().message;
  };
  CHECK(message_of("not json").find("not a JSON ExecCredential") != std::string::npos);
  CHECK(
      message_of(
          R"({"apiVersion":"client.authentication.k8s.io/v1beta1","kind":"ExecCredential","status":{"token":"x"}})")
          .find("apiVersion") != std::string::npos);
  CHECK(message_of(R"({"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential"})")
            .find("without status") != std::string::npos);
  CHECK(message_of(R"({"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{}})")
            .find("neither") != std::string::npos);
  CHECK(message_of(exec_credential("x", "yesterday")).find("RFC 3339") != std::string::npos);
}

TEST_CASE("the exec plugin runs again near expiry and after a 401, not before", "[kube][credentials]") {
  int runs = 0;
  std::string next_output;
  std::vector<std::pair<std::string, std::string>> seen_environment;
  ProcessRunner runner = [&](const std::vector<std::string>& argv,
                             const std::vector<std::pair<std::string, std::string>>& environment,
                             std::chrono::milliseconds) -> Result<ProcessOutput> {
    ++runs;
    CHECK(argv == std::vector<std::string>{"get-token", "--fast"});
    seen_environment = environment;
    return ProcessOutput{0, next_output, ""};
  };
  ExecConfig exec;
  exec.command = "get-token";
  exec.args = {"--fast"};
  exec.env = {{"PROFILE", "p"}};
  exec.provide_cluster_info = true;
  ExecCredentialSource source(exec, "https://h:1", "CA", runner, 10s);

  SECTION("a long-lived credential is reused") {
    next_output = exec_credential("t1", rfc3339(std::chrono::system_clock::now() + 1h));
    CHECK(source.current()->bearer_token == "t1");
    CHECK(source.current()->bearer_token == "t1");
    CHECK(runs == 1);
    bool saw_info = false;
    for (const auto& [name, value] : seen_environment) {
      if (name == "KUBERNETES_EXEC_INFO") {
        saw_info = true;
        CHECK(value.find(R"("interactive":false)") != std::string::npos);
        CHECK(value.find(R"("server":"https://h:1")") != std::string::npos);
        CHECK(value.find(R"("certificate-authority-data":"Q0E=")") != std::string::npos);
      }
    }
    CHECK(saw_info);
    SECTION("until the server says 401") {
      Credential rejected;
      rejected.bearer_token = "t1";
      next_output = exec_credential("t2", rfc3339(std::chrono::system_clock::now() + 1h));
      source.unauthorized(rejected);
      CHECK(source.current()->bearer_token == "t2");
      CHECK(runs == 2);
    }
  }
  SECTION("a credential about to expire is refreshed") {
    next_output = exec_credential("short", rfc3339(std::chrono::system_clock::now() + 5s));
    CHECK(source.current()->bearer_token == "short");
    next_output = exec_credential("fresh", rfc3339(std::chrono::system_clock::now() + 1h));
    CHECK(source.current()->bearer_token == "fresh");
    CHECK(runs == 2);
  }
  SECTION("a failing plugin is an error with its stderr") {
    runner = nullptr;
    ExecCredentialSource failing(exec, "https://h:1", "", [](auto&&...) -> Result<ProcessOutput> {
      return ProcessOutput{1, "", "token expired, run login\n"};
    });
    auto credential = failing.current();
    REQUIRE_FALSE(credential.ok());
    CHECK(credential.error().message.find("get-token") != std::string::npos);
    CHECK(credential.error().message.find("token expired, run login") != std::string::npos);
  }
}

TEST_CASE("run_process captures output, exit code and environment, and enforces its timeout",
          "[kube][credentials]") {
  auto output = run_process({"/bin/sh", "-c", "echo out:$MYOP_TEST_VARIABLE; echo err >&2; exit 3"},
                            {{"MYOP_TEST_VARIABLE", "value"}}, 5s);
  REQUIRE(output.ok());
  CHECK(output->exit_code == 3);
  CHECK(output->standard_output == "out:value\n");
  CHECK(output->standard_error == "err\n");

  const auto started = std::chrono::steady_clock::now();
  auto slow = run_process({"/bin/sh", "-c", "sleep 30"}, {}, 300ms);
  REQUIRE_FALSE(slow.ok());
  CHECK(slow.error().reason == Reason::Timeout);
  CHECK(std::chrono::steady_clock::now() - started < 5s);

  auto missing = run_process({"/nonexistent/plugin"}, {}, 1s);
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().message.find("/nonexistent/plugin") != std::string::npos);
}

TEST_CASE("run_process caps what it reads of a program's output", "[kube][credentials]") {
  SECTION("10 MiB on standard output: the program is killed and the run fails") {
    // Without the cap this runs until its timeout and fails as Timeout instead.
    auto flood = run_process({"/bin/sh", "-c", "head -c 10485760 /dev/zero; sleep 60"}, {}, 30s);
    REQUIRE_FALSE(flood.ok());
    CHECK(flood.error().reason == Reason::Unknown);
    CHECK(flood.error().message ==
          "/bin/sh printed more than 1048576 bytes on standard output and was killed");
  }
  SECTION("exactly the cap is accepted") {
    auto full = run_process({"/bin/sh", "-c", "head -c 1048576 /dev/zero"}, {}, 30s);
    REQUIRE(full.ok());
    CHECK(full->exit_code == 0);
    CHECK(full->standard_output.size() == kMaximumProcessOutputBytes);
  }
  SECTION("standard error keeps its first 64 KiB and the program finishes") {
    auto chatty = run_process(
        {"/bin/sh", "-c", "head -c 1048576 /dev/zero | tr '\\0' e >&2; echo done; exit 2"}, {}, 30s);
    REQUIRE(chatty.ok());
    CHECK(chatty->exit_code == 2);
    CHECK(chatty->standard_output == "done\n");
    CHECK(chatty->standard_error.rfind(std::string(kKeptProcessErrorBytes, 'e'), 0) == 0);
    CHECK(chatty->standard_error.substr(kKeptProcessErrorBytes) ==
          "\n[" + std::to_string(1048576 - kKeptProcessErrorBytes) +
              " more bytes of standard error dropped]");
  }
}

TEST_CASE("an exec plugin that prints too much is cut off with an error naming it", "[kube][credentials]") {
  ExecConfig exec;
  exec.command = "/bin/sh";
  exec.args = {"-c", "exec yes"};  // prints until stopped
  ExecCredentialSource source(exec, "https://h:1", "");
  auto credential = source.current();
  REQUIRE_FALSE(credential.ok());
  CHECK(credential.error().reason == Reason::Unauthorized);
  CHECK(credential.error().message ==
        "exec credential plugin /bin/sh: /bin/sh printed more than 1048576 bytes on standard output and was "
        "killed");
}

TEST_CASE("ExecCredential output is parsed with the bounded parser", "[kube][credentials]") {
  const std::string v1 = "client.authentication.k8s.io/v1";
  auto deep = parse_exec_credential(std::string(100'000, '['), "my-plugin", v1);
  REQUIRE_FALSE(deep.ok());
  CHECK(deep.error().message.find("my-plugin") != std::string::npos);
  CHECK(deep.error().message.find("nested deeper than 128") != std::string::npos);

  const std::string padded = exec_credential(std::string(kMaximumProcessOutputBytes, 't'));
  auto large = parse_exec_credential(padded, "my-plugin", v1);
  REQUIRE_FALSE(large.ok());
  CHECK(large.error().message.find("larger than the limit of 1048576 bytes") != std::string::npos);
}

TEST_CASE("the credential source matches the configuration", "[kube][credentials]") {
  ClientConfig config;
  config.token = "static";
  CHECK(make_credential_source(config)->current()->bearer_token == "static");
  const std::string path = temp_file("from-file");
  config.token_file = path;
  CHECK(make_credential_source(config)->current()->bearer_token == "from-file");
  fs::remove(path);
}
