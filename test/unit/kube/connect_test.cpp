#include "kube/connect.h"

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <random>
#include <string>

namespace fs = std::filesystem;
using namespace myop::kube;

namespace {

// A kubeconfig file in a folder of its own, removed afterwards.
class KubeconfigFile {
 public:
  explicit KubeconfigFile(const std::string& content) {
    std::random_device random;
    dir_ = fs::temp_directory_path() / ("myop-connect-test-" + std::to_string(random()));
    fs::create_directories(dir_);
    std::ofstream(path()) << content;
  }
  ~KubeconfigFile() {
    std::error_code ignored;
    fs::remove_all(dir_, ignored);
  }
  KubeconfigFile(const KubeconfigFile&) = delete;
  KubeconfigFile& operator=(const KubeconfigFile&) = delete;
  std::string path() const { return (dir_ / "config").string(); }

 private:
  fs::path dir_;
};

std::string kubeconfig(const std::string& cluster_extra) {
  return "apiVersion: v1\nkind: Config\ncurrent-context: c\nclusters:\n- name: c\n  cluster:\n"
         "    server: https://127.0.0.1:6443\n" +
         cluster_extra +
         "users:\n- name: u\n  user:\n    token: abc\ncontexts:\n- name: c\n  context:\n"
         "    cluster: c\n    user: u\n";
}

// Only the file named: nothing of the real environment.
ConfigSearch only(const std::string& path) {
  ConfigSearch search;
  search.kubeconfig_path = path;
  search.kubeconfig_env = "";
  search.home = "/nonexistent-home";
  search.service_host = "";
  search.service_port = "";
  return search;
}

}  // namespace

TEST_CASE("connect: a kubeconfig gives a client of its server, without a request", "[kube][connect]") {
  KubeconfigFile file(kubeconfig(""));
  auto connection = connect(only(file.path()), {}, "connect-test");
  REQUIRE(connection);
  CHECK(connection->config.server == "https://127.0.0.1:6443");
  CHECK(connection->config.context_name == "c");
  CHECK(connection->transport != nullptr);
  CHECK(connection->client != nullptr);
}

TEST_CASE("connect: each failure names what was looked at", "[kube][connect]") {
  SECTION("no configuration") {
    auto connection = connect(only("/nonexistent/kubeconfig"), {}, "connect-test");
    REQUIRE_FALSE(connection);
    CHECK(connection.error().reason == Reason::InvalidConfiguration);
    CHECK_THAT(connection.error().message, Catch::StartsWith("no usable cluster configuration: "));
    CHECK_THAT(connection.error().message, Catch::Contains("/nonexistent/kubeconfig"));
  }
  SECTION("a certificate authority that is no certificate") {
    KubeconfigFile file(
        kubeconfig("    certificate-authority-data: "
                   "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUJmYWtlCi0tLS0tRU5EIENFUlRJRklDQVRFLS0tLS0K\n"));
    auto connection = connect(only(file.path()), {}, "connect-test");
    REQUIRE_FALSE(connection);
    CHECK(connection.error().reason == Reason::InvalidConfiguration);
    CHECK_THAT(connection.error().message,
               Catch::StartsWith("cannot set up the connection to https://127.0.0.1:6443: "));
  }
}
