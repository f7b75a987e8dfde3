// The MyResource CRD and its annotation policy on the real API server: the schema installs (CEL
// compiles within the cost budget), defaults apply, and bad objects are refused with the
// messages a person can act on. Server-side dry runs: nothing is stored.
#include <catch2/catch.hpp>

#include <string>

#include "support/testenv.h"

using namespace myop::testenv;

namespace {

void install_crd() { apply_crd(); }

std::string manifest(const std::string& spec, const std::string& annotations = "{}",
                     const std::string& name = "sample") {
  return "apiVersion: myorg.io/v1alpha1\nkind: MyResource\nmetadata:\n  name: " + name +
         "\n  annotations: " + annotations + "\nspec: " + spec + "\n";
}

CommandResult dry_run(const std::string& yaml, const std::string& namespace_name) {
  return kubectl_apply(yaml, "--dry-run=server -n " + namespace_name);
}

}  // namespace

TEST_CASE("the CRD installs, serves v1alpha1 and applies defaults", "[myresource][crd]") {
  install_crd();
  ScopedNamespace ns("mr-crd");
  CommandResult created =
      kubectl_apply(manifest("{image: \"reg:5000/app:1.0\", canary: {}}"), "-n " + ns.name());
  REQUIRE(created.ok());
  std::string spec = kubectl_or_fail("get mr sample -n " + ns.name() + " -o jsonpath={.spec}");
  CHECK(spec.find("\"replicas\":1") != std::string::npos);
  CHECK(spec.find("\"progressDeadlineSeconds\":600") != std::string::npos);
  CHECK(kubectl_or_fail("get myresources.myorg.io -n " + ns.name()).find("REPLICAS") != std::string::npos);
}

TEST_CASE("invalid specs are refused with the CEL message", "[myresource][crd]") {
  install_crd();
  ScopedNamespace ns("mr-cel");
  struct Case {
    std::string spec;
    std::string message;
  };
  auto [spec, message] = GENERATE(values<Case>({
      {"{image: nginx}", "spec.image must carry a tag or a digest"},
      {"{image: \"reg:5000/app\"}", "spec.image must carry a tag or a digest"},
      {"{image: \"nginx:latest\"}", "must not use the :latest tag"},
      {"{image: \"Nginx:1\"}", "is not a valid image reference"},
      {"{image: \"a:1\", replicas: 1001}", "spec.replicas must be between 0 and 1000"},
      {"{image: \"a:1\", replicas: -1}", "spec.replicas must be between 0 and 1000"},
      {"{image: \"a:1\", port: 0}", "spec.port must be a TCP port between 1 and 65535"},
      {"{image: \"a:1\", canary: {replicas: 0}}", "spec.canary.replicas must be between 1 and 1000"},
      {"{image: \"a:1\", progressDeadlineSeconds: 0}",
       "spec.progressDeadlineSeconds must be between 1 and 86400"},
      {"{image: \"a:1\", env: [{name: 1X}]}", "spec.env[].name must consist of"},
  }));
  CAPTURE(spec);
  CommandResult result = dry_run(manifest(spec), ns.name());
  CHECK_FALSE(result.ok());
  CHECK_THAT(result.output, Catch::Contains(message));
}

TEST_CASE("valid specs pass, registry ports and digests included", "[myresource][crd]") {
  install_crd();
  ScopedNamespace ns("mr-valid");
  auto spec =
      GENERATE(as<std::string>{}, "{image: \"reg:5000/team/app:1.0\"}",
               "{image: \"app@sha256:" + std::string(64, 'a') + "\"}",
               "{image: \"app:latest-2\", replicas: 0}", "{image: \"a:1\", port: 65535, replicas: 1000}");
  CAPTURE(spec);
  CommandResult result = dry_run(manifest(spec), ns.name());
  CHECK(result.ok());
  CAPTURE(result.output);
}

TEST_CASE("bad annotations are refused by the admission policy", "[myresource][crd]") {
  install_crd();
  ScopedNamespace ns("mr-annotations");
  struct Case {
    std::string annotations;
    std::string message;
  };
  auto [annotations, message] = GENERATE(values<Case>({
      {"{myorg.io/canary: \"true\", myorg.io/targetVersion: \"bad/tag\"}", "is not a valid image tag"},
      {"{myorg.io/canary: \"true\"}", "myorg.io/targetVersion is missing"},
      {"{myorg.io/targetVersion: latest}", "must not be \"latest\""},
      {"{myorg.io/canary: \"yes\"}", "must be \"true\" or \"false\""},
      {"{myorg.io/features: orphanSweep}", "comma-separated list of name=value"},
  }));
  CAPTURE(annotations);
  // A fresh policy takes a moment to be enforced: retry briefly.
  CommandResult result;
  for (int attempt = 0; attempt < 25; ++attempt) {
    result = dry_run(manifest("{image: \"a:1\"}", annotations), ns.name());
    if (!result.ok()) break;
    run("sleep 0.2");
  }
  CHECK_FALSE(result.ok());
  CHECK_THAT(result.output, Catch::Contains(message));
}

TEST_CASE("names longer than a label value are refused", "[myresource][crd]") {
  install_crd();
  ScopedNamespace ns("mr-name");
  CommandResult result = dry_run(manifest("{image: \"a:1\"}", "{}", std::string(64, 'a')), ns.name());
  CHECK_FALSE(result.ok());
  CHECK_THAT(result.output, Catch::Contains("metadata.name must be at most 63 characters"));
}
