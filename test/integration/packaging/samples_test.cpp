// config/samples has each sample in both served versions: the v1beta1 file is what the API server
// makes of the v1alpha1 file, and the other way round (converted by the test control plane's
// webhook, which runs this release's conversion).
#include <catch2/catch.hpp>

#include "packaging_support.h"

using namespace myop;
using namespace myop::packaging;

namespace {

// Equal as data: maps with the same keys and equal values in any order, sequences element by element,
// scalars as text (so 3 and "3" are equal, as they are to the API server once the schema types them).
bool same_data(const YAML::Node& left, const YAML::Node& right) {
  if (left.Type() != right.Type()) return false;
  switch (left.Type()) {
    case YAML::NodeType::Map:
      if (left.size() != right.size()) return false;
      for (const auto& entry : left) {
        const YAML::Node other = right[entry.first.as<std::string>()];
        if (!other || !same_data(entry.second, other)) return false;
      }
      return true;
    case YAML::NodeType::Sequence:
      if (left.size() != right.size()) return false;
      for (std::size_t index = 0; index < left.size(); ++index)
        if (!same_data(left[index], right[index])) return false;
      return true;
    case YAML::NodeType::Scalar:
      return left.Scalar() == right.Scalar();
    default:
      return true;
  }
}

// The object `name` of `namespace_` read in `version` of myresources.myorg.io.
YAML::Node read_as(const std::string& version, const std::string& name, const std::string& namespace_) {
  return YAML::Load(testenv::kubectl_or_fail("get myresources." + version + ".myorg.io " + name + " -n " +
                                             namespace_ + " -o json"));
}

// The myorg.io/ annotations of an object (the moved canary and feature settings among them).
YAML::Node myorg_annotations(const YAML::Node& object) {
  YAML::Node annotations(YAML::NodeType::Map);
  for (const auto& entry : object["metadata"]["annotations"]) {
    const std::string key = entry.first.as<std::string>();
    if (key.rfind("myorg.io/", 0) == 0) annotations[key] = entry.second;
  }
  return annotations;
}

}  // namespace

TEST_CASE("packaging: each v1beta1 sample is its v1alpha1 sample converted, and the other way round",
          "[packaging][samples]") {
  const std::string samples = testenv::source_dir() + "/config/samples/";
  for (const std::string stem : {"myresource", "myresource_canary"}) {
    const std::string alpha_file = samples + "myorg.io_v1alpha1_" + stem + ".yaml";
    const std::string beta_file = samples + "myorg.io_v1beta1_" + stem + ".yaml";
    INFO(alpha_file << " and " << beta_file);
    const YAML::Node alpha = YAML::LoadFile(alpha_file);
    const YAML::Node beta = YAML::LoadFile(beta_file);
    REQUIRE(alpha["apiVersion"].as<std::string>() == "myorg.io/v1alpha1");
    REQUIRE(beta["apiVersion"].as<std::string>() == "myorg.io/v1beta1");
    const std::string name = alpha["metadata"]["name"].as<std::string>();
    REQUIRE(beta["metadata"]["name"].as<std::string>() == name);

    // Written as v1alpha1, read as v1beta1: the v1beta1 sample (no operator runs: nothing is added).
    testenv::ScopedNamespace from_alpha("pkg-samples-alpha");
    testenv::kubectl_or_fail("create -n " + from_alpha.name() + " -f " + alpha_file);
    const YAML::Node alpha_as_beta = read_as("v1beta1", name, from_alpha.name());
    INFO("v1alpha1 sample read as v1beta1: " << YAML::Dump(alpha_as_beta["spec"]));
    CHECK(same_data(alpha_as_beta["spec"], beta["spec"]));
    CHECK(same_data(myorg_annotations(alpha_as_beta), myorg_annotations(beta)));

    // Written as v1beta1, read as v1alpha1: the v1alpha1 sample, annotations included.
    testenv::ScopedNamespace from_beta("pkg-samples-beta");
    testenv::kubectl_or_fail("create -n " + from_beta.name() + " -f " + beta_file);
    const YAML::Node beta_as_alpha = read_as("v1alpha1", name, from_beta.name());
    INFO("v1beta1 sample read as v1alpha1: " << YAML::Dump(beta_as_alpha["spec"]) << "\n"
                                             << YAML::Dump(beta_as_alpha["metadata"]["annotations"]));
    CHECK(same_data(beta_as_alpha["spec"], alpha["spec"]));
    CHECK(same_data(myorg_annotations(beta_as_alpha), myorg_annotations(alpha)));
  }
}
