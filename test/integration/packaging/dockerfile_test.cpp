// The Dockerfile's runtime stage installs the Debian packages of every shared library the
// built my-operator links (ldd), and the image is the hardened one the manifests expect.
// There is no container engine here: this is the review, automated.
#include <catch2/catch.hpp>

#include <set>
#include <sstream>

#include "packaging_support.h"

using namespace myop;
using namespace myop::packaging;

namespace {

std::string dockerfile() { return read_text(testenv::source_dir() + "/Dockerfile"); }

// The words of ARG RUNTIME_PACKAGES="..." (continuation lines joined).
std::set<std::string> runtime_packages() {
  std::string text = std::regex_replace(dockerfile(), std::regex("\\\\\n"), " ");
  std::smatch match;
  REQUIRE(std::regex_search(text, match, std::regex("ARG RUNTIME_PACKAGES=\"([^\"]*)\"")));
  std::istringstream words(match[1].str());
  std::set<std::string> packages;
  for (std::string word; words >> word;) packages.insert(word);
  return packages;
}

// The Debian package that ships a shared library (usr-merged paths tried both ways).
std::string package_of(const std::string& library) {
  std::error_code ignored;
  const std::string real_path = std::filesystem::canonical(library, ignored).string();
  for (const std::string& path : {library, real_path, "/usr" + library}) {
    if (path.empty()) continue;
    const auto result = testenv::run("dpkg -S " + shell_quote(path) + " 2>/dev/null");
    if (result.ok()) return result.output.substr(0, result.output.find(':'));
  }
  return "";
}

}  // namespace

TEST_CASE("packaging: the runtime stage installs the package of every shared library my-operator links",
          "[packaging][docker]") {
  const std::string binary = testenv::binary_dir() + "/my-operator";
  INFO("build the my-operator target first (" << binary << ")");
  REQUIRE(std::filesystem::exists(binary));
  const auto ldd = testenv::run("ldd " + shell_quote(binary));
  INFO(ldd.output);
  REQUIRE(ldd.ok());
  const std::set<std::string> listed = runtime_packages();
  std::set<std::string> needed;
  std::istringstream lines(ldd.output);
  static const std::regex resolved(R"(^\s*\S+ => (/\S+) )");
  for (std::string line; std::getline(lines, line);) {
    std::smatch match;
    INFO(line);
    CHECK(line.find("not found") == std::string::npos);
    if (!std::regex_search(line, match, resolved)) continue;
    const std::string package = package_of(match[1]);
    INFO("no Debian package ships " << match[1]);
    REQUIRE_FALSE(package.empty());
    needed.insert(package);
    INFO("add " << package << " (for " << match[1] << ") to RUNTIME_PACKAGES in the Dockerfile");
    CHECK(listed.count(package) == 1);
  }
  CHECK(needed.count("libstdc++6") == 1);
  for (const std::string& package : listed) {
    if (!needed.count(package) && package != "ca-certificates")
      WARN("RUNTIME_PACKAGES lists " << package << ", which the current build does not link (yet)");
  }
}

TEST_CASE("packaging: the Dockerfile builds in Debian 12 and runs slim as uid 65532 with OCI labels",
          "[packaging][docker]") {
  const std::string text = dockerfile();
  std::vector<std::string> stages;
  static const std::regex from(R"((^|\n)FROM (\S+)( AS (\S+))?)");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), from); it != std::sregex_iterator(); ++it)
    stages.push_back((*it)[2]);
  REQUIRE(stages.size() == 2);
  CHECK(stages[0] == "debian:12");
  CHECK(stages[1] == "debian:12-slim");
  CHECK(text.find("-DBUILD_TESTING=OFF") != std::string::npos);
  for (const char* dev_package : {"libboost-dev", "rapidjson-dev", "libspdlog-dev", "prometheus-cpp-dev",
                                  "libcli11-dev", "libssl-dev", "libyaml-cpp-dev", "libzstd-dev"}) {
    INFO(dev_package);
    CHECK(text.find(dev_package) != std::string::npos);
  }
  // The last USER is the numeric non-root uid the manifests' runAsUser names.
  const auto user = text.rfind("\nUSER ");
  REQUIRE(user != std::string::npos);
  CHECK(text.substr(user + 6, text.find('\n', user + 1) - user - 6) == "65532:65532");
  for (const char* label : {"org.opencontainers.image.title", "org.opencontainers.image.version",
                            "org.opencontainers.image.revision", "org.opencontainers.image.source",
                            "org.opencontainers.image.created"}) {
    INFO(label);
    CHECK(text.find(label) != std::string::npos);
  }
  // No -dev package in the runtime stage.
  const std::set<std::string> packages = runtime_packages();
  for (const std::string& package : packages) CHECK(package.find("-dev") == std::string::npos);
}

TEST_CASE("packaging: .dockerignore keeps build trees, caches and .git out of the context",
          "[packaging][docker]") {
  const std::string ignore = read_text(testenv::source_dir() + "/.dockerignore");
  std::vector<std::string> rules;
  std::istringstream lines(ignore);
  for (std::string line; std::getline(lines, line);)
    if (!line.empty() && line[0] != '#') rules.push_back(line);
  REQUIRE_FALSE(rules.empty());
  CHECK(rules.front() == "*");
  for (const std::string& rule : rules) {
    INFO(rule);
    CHECK((rule == "*" || rule.rfind("!", 0) == 0));
    CHECK(rule.find("build") == std::string::npos);
    CHECK(rule.find(".cache") == std::string::npos);
    CHECK(rule.find(".git") == std::string::npos);
  }
  // What the Dockerfile COPYs is let in.
  const std::string text = dockerfile();
  static const std::regex copy(R"(\nCOPY (\S+) )");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), copy); it != std::sregex_iterator(); ++it) {
    std::string source = (*it)[1];
    if (source.rfind("--from", 0) == 0) continue;
    if (source.back() != '/' && std::filesystem::is_directory(testenv::source_dir() + "/" + source))
      source += "/";
    INFO("COPY " << source);
    CHECK(std::find(rules.begin(), rules.end(), "!" + source) != rules.end());
  }
}
