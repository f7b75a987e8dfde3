// --metrics-secure on the real control plane: the built operator serves /metrics over HTTPS with a
// certificate from --metrics-cert-dir, and the API server decides every scrape (TokenReview +
// SubjectAccessReview). ServiceAccount tokens come from the TokenRequest API (`kubectl create
// token`); the scraper's ServiceAccount holds config/rbac's metrics-reader ClusterRole.
// Replacing the certificate files changes what new TLS connections are served, without a restart.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "myresource/operator_process.h"
#include "support/testenv.h"

using namespace myop;
using namespace myop::testing;
using namespace std::chrono_literals;

namespace {

std::string quoted(const std::string& text) { return "'" + text + "'"; }

std::string last_line(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ')) text.pop_back();
  return text.substr(text.find_last_of('\n') + 1);
}

// A CA and a serving certificate it signed for 127.0.0.1 and localhost, written as
// <folder>/ca.crt, tls.crt, tls.key.
void make_ca_signed_certificate(const std::filesystem::path& folder, const std::string& common_name) {
  std::filesystem::create_directories(folder);
  const std::string at = quoted(folder.string()) + "/";
  {
    std::ofstream extensions(folder / "san.ext");
    extensions << "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n";
  }
  for (const std::string& command :
       {"openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj /CN=" +
            common_name + "-ca -keyout " + at + "ca.key -out " + at + "ca.crt",
        "openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=" + common_name +
            " -keyout " + at + "tls.key -out " + at + "tls.csr",
        "openssl x509 -req -days 1 -in " + at + "tls.csr -CA " + at + "ca.crt -CAkey " + at +
            "ca.key -CAcreateserial -extfile " + at + "san.ext -out " + at + "tls.crt"}) {
    const auto result = testenv::run(command);
    if (!result.ok()) FAIL(command << ": " << result.output);
  }
}

struct Scrape {
  int status = 0;  // 0: no HTTP answer (TLS or connection failure)
  std::string body;
};

// curl over HTTPS, verifying the server with `ca` (a file); `token` "" sends no Authorization.
Scrape scrape(unsigned short port, const std::string& ca, const std::string& token,
              const std::string& method = "GET", const std::string& scheme = "https") {
  const std::string body_file = testenv::binary_dir() + "/testenv/secure-metrics-body.txt";
  std::remove(body_file.c_str());
  std::string command = "curl -s --max-time 20 -o " + quoted(body_file) + " -w '%{http_code}' ";
  if (method == "HEAD") command += "-I ";
  if (!ca.empty()) command += "--cacert " + quoted(ca) + " ";
  if (!token.empty()) command += "-H " + quoted("Authorization: Bearer " + token) + " ";
  command += scheme + "://127.0.0.1:" + std::to_string(port) + "/metrics";
  const auto result = testenv::run(command);
  Scrape answer;
  answer.status = std::atoi(last_line(result.output).c_str());
  std::ifstream file(body_file);
  answer.body.assign(std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>());
  return answer;
}

// The subject and serial of the certificate a new TLS connection to the port is served.
std::string served_certificate(unsigned short port) {
  const auto result = testenv::run("openssl s_client -connect 127.0.0.1:" + std::to_string(port) +
                                   " </dev/null 2>/dev/null | openssl x509 -noout -subject -serial");
  return result.ok() ? result.output : std::string();
}

std::string certificate_of(const std::filesystem::path& file) {
  return testenv::run("openssl x509 -noout -subject -serial -in " + quoted(file.string())).output;
}

// How often the operator has logged `text` so far.
std::size_t log_count(const OperatorProcess& process, const std::string& text) {
  std::ifstream file(process.log_path());
  const std::string log((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  std::size_t count = 0;
  for (auto at = log.find(text); at != std::string::npos; at = log.find(text, at + 1)) ++count;
  return count;
}

std::string token_for(const std::string& account, const std::string& namespace_) {
  return last_line(
      testenv::kubectl_or_fail("create token " + account + " -n " + namespace_ + " --duration=10m"));
}

class ClusterRoleBinding {
 public:
  ClusterRoleBinding(std::string name, const std::string& args) : name_(std::move(name)) {
    testenv::kubectl("delete clusterrolebinding " + name_ + " --ignore-not-found");
    testenv::kubectl_or_fail("create clusterrolebinding " + name_ + " " + args);
  }
  ~ClusterRoleBinding() { testenv::kubectl("delete clusterrolebinding " + name_ + " --ignore-not-found"); }
  ClusterRoleBinding(const ClusterRoleBinding&) = delete;
  ClusterRoleBinding& operator=(const ClusterRoleBinding&) = delete;

 private:
  std::string name_;
};

}  // namespace

TEST_CASE(
    "secure metrics (--metrics-secure): HTTPS, scrapes decided by the API server, the certificate reloaded "
    "without a restart",
    "[myresource][operator][metrics][security]") {
  testenv::ScopedNamespace ns("secure-metrics");
  const std::filesystem::path folder = testenv::binary_dir() + "/testenv/secure-metrics-" + ns.name();
  std::filesystem::remove_all(folder);
  const std::filesystem::path served = folder / "served";
  make_ca_signed_certificate(folder / "first", "myop-metrics-first");
  std::filesystem::create_directories(served);
  std::filesystem::copy_file(folder / "first/tls.crt", served / "tls.crt");
  std::filesystem::copy_file(folder / "first/tls.key", served / "tls.key");
  const std::string first_ca = (folder / "first/ca.crt").string();

  // Prometheus's side: config/rbac's metrics-reader, bound to one ServiceAccount only.
  const std::string reader_role = apply_test_cluster_role("metrics_reader_role.yaml");
  testenv::kubectl_or_fail("create serviceaccount scraper -n " + ns.name());
  testenv::kubectl_or_fail("create serviceaccount stranger -n " + ns.name());
  ClusterRoleBinding reader("myop-test-" + ns.name() + "-metrics-reader",
                            "--clusterrole " + reader_role + " --serviceaccount " + ns.name() + ":scraper");

  OperatorProcess operator_process({.user = "myop-secure-metrics",
                                    .namespaces = {ns.name()},
                                    .pod_namespace = ns.name(),
                                    .extra_args = {"--metrics-secure", "--metrics-cert-dir", served.string()},
                                    .extra_cluster_role_files = {"metrics_auth_role.yaml"}});
  operator_process.start();
  const unsigned short port = operator_process.metrics_port();

  const std::string scraper_token = token_for("scraper", ns.name());
  const std::string stranger_token = token_for("stranger", ns.name());

  SECTION("a metrics-reader token scrapes metric text; others get 401 or 403; plain HTTP gets no answer") {
    const Scrape allowed = scrape(port, first_ca, scraper_token);
    INFO("operator log:\n" << operator_process.log_tail(30));
    CHECK(allowed.status == 200);
    CHECK(allowed.body.find("# TYPE controller_runtime_reconcile_total counter") != std::string::npos);
    CHECK(allowed.body.find("myoperator_build_info") != std::string::npos);

    const Scrape forbidden = scrape(port, first_ca, stranger_token);
    CHECK(forbidden.status == 403);
    CHECK(forbidden.body.find("controller_runtime") == std::string::npos);
    CHECK(forbidden.body.find("system:serviceaccount:" + ns.name() + ":stranger") != std::string::npos);

    CHECK(scrape(port, first_ca, "").status == 401);
    CHECK(scrape(port, first_ca, "not-a-token").status == 401);
    // A real token with its last characters changed is not authenticated either.
    CHECK(scrape(port, first_ca, scraper_token.substr(0, scraper_token.size() - 4) + "AAAA").status == 401);

    // Plain HTTP to the HTTPS port: no HTTP answer at all.
    CHECK(scrape(port, "", scraper_token, "GET", "http").status == 0);
    // The operator's own certificate user is not a metrics reader.
    CHECK(operator_process.running());
  }

  SECTION("HEAD is RBAC verb head on a non-resource URL, on the API server and here alike") {
    // metrics-reader grants `get` on /metrics, which covers the API server's own /metrics too.
    const std::string apiserver = testenv::server_url() + "/metrics";
    auto api_status = [&](const std::string& flag) {
      return last_line(testenv::run("curl -s -o /dev/null -w '%{http_code}' " + flag + " --cacert " +
                                    quoted(testenv::ca_path()) + " -H " +
                                    quoted("Authorization: Bearer " + scraper_token) + " " +
                                    quoted(apiserver))
                           .output);
    };
    CHECK(api_status("") == "200");
    CHECK(api_status("-I") == "403");
    CHECK(scrape(port, first_ca, scraper_token, "HEAD").status == 403);
    CHECK(scrape(port, first_ca, scraper_token, "GET").status == 200);
  }

  SECTION("new certificate files are served to new connections without a restart; a bad pair is not") {
    REQUIRE(scrape(port, first_ca, scraper_token).status == 200);
    const std::string first_served = served_certificate(port);
    CHECK(first_served == certificate_of(folder / "first/tls.crt"));

    make_ca_signed_certificate(folder / "second", "myop-metrics-second");
    const std::string second_ca = (folder / "second/ca.crt").string();
    // As a Secret volume update does it: each file replaced by a rename (the pair is briefly
    // mismatched between the two).
    std::filesystem::copy_file(folder / "second/tls.key", served / "tls.key.new");
    std::filesystem::rename(served / "tls.key.new", served / "tls.key");
    std::filesystem::copy_file(folder / "second/tls.crt", served / "tls.crt.new");
    std::filesystem::rename(served / "tls.crt.new", served / "tls.crt");

    const std::string second_certificate = certificate_of(folder / "second/tls.crt");
    REQUIRE(second_certificate != first_served);
    CHECK(eventually([&] { return served_certificate(port) == second_certificate; }, 30s));
    INFO("operator log:\n" << operator_process.log_tail(30));
    const Scrape after = scrape(port, second_ca, scraper_token);
    CHECK(after.status == 200);
    CHECK(after.body.find("controller_runtime_reconcile_total") != std::string::npos);
    CHECK(scrape(port, first_ca, scraper_token).status == 0);  // the old CA no longer verifies it

    // A certificate without its key: refused, the second pair stays.
    const std::string refusal = "do not load; keeping the current certificate";
    const std::size_t refusals = log_count(operator_process, refusal);
    make_ca_signed_certificate(folder / "third", "myop-metrics-third");
    std::filesystem::copy_file(folder / "third/tls.crt", served / "tls.crt",
                               std::filesystem::copy_options::overwrite_existing);
    CHECK(eventually([&] { return log_count(operator_process, refusal) > refusals; }, 30s));
    CHECK(served_certificate(port) == second_certificate);
    CHECK(scrape(port, second_ca, scraper_token).status == 200);
    CHECK(operator_process.running());
  }

  SECTION("the API server unreachable: 500, and scrapes work again once it is back") {
    if (!testenv::owns_control_plane())
      FAIL("needs the ctest fixture's control plane, to stop its API server");
    const std::string fresh_token = token_for("stranger", ns.name());  // not cached by the operator
    testenv::stop_apiserver();
    const Scrape unavailable = scrape(port, first_ca, fresh_token);
    testenv::start_apiserver();
    INFO("operator log:\n" << operator_process.log_tail(30));
    CHECK(unavailable.status == 500);
    CHECK(eventually([&] { return scrape(port, first_ca, token_for("scraper", ns.name())).status == 200; },
                     60s));
  }
  std::filesystem::remove_all(folder);
}
