#include "runtime/cache/selector.h"

#include <catch2/catch.hpp>

#include "support/object_builder.h"

using namespace myop::runtime;
using myop::runtime::testing::make_object;

namespace {

bool matches(const std::string& labels, const std::string& fields, const std::string& object_labels,
             const std::string& name = "web") {
  auto selector = Selector::parse(labels, fields);
  REQUIRE(selector);
  auto object = make_object(R"({"metadata":{"namespace":"team","name":")" + name + R"(","labels":)" +
                            object_labels + "}}");
  return selector->matches(object->view());
}

}  // namespace

TEST_CASE("label selectors match as the API server's do", "[runtime][selector]") {
  const std::string ours = R"({"app.kubernetes.io/managed-by":"my-operator","tier":"web"})";
  CHECK(matches("", "", ours));
  CHECK(matches("app.kubernetes.io/managed-by=my-operator", "", ours));
  CHECK(matches("app.kubernetes.io/managed-by==my-operator", "", ours));
  CHECK_FALSE(matches("app.kubernetes.io/managed-by=helm", "", ours));
  CHECK(matches("tier!=db", "", ours));
  CHECK(matches("missing!=x", "", ours));  // != also matches objects without the label
  CHECK(matches("tier", "", ours));
  CHECK_FALSE(matches("!tier", "", ours));
  CHECK(matches("!missing", "", ours));
  CHECK(matches("tier in (db, web)", "", ours));
  CHECK_FALSE(matches("tier notin (db,web)", "", ours));
  CHECK(matches("tier notin (db)", "", ours));
  CHECK_FALSE(matches("missing in (x)", "", ours));
  CHECK(matches("tier in (web),app.kubernetes.io/managed-by=my-operator", "", ours));
  CHECK_FALSE(matches("tier in (web),app.kubernetes.io/managed-by=helm", "", ours));
}

TEST_CASE("field selectors on name and namespace are evaluated, others refused", "[runtime][selector]") {
  CHECK(matches("", "metadata.name=web", "{}"));
  CHECK_FALSE(matches("", "metadata.name=web", "{}", "api"));
  CHECK(matches("", "metadata.namespace=team,metadata.name!=api", "{}"));
  CHECK_FALSE(matches("", "metadata.namespace!=team", "{}"));
  std::string error;
  CHECK_FALSE(Selector::parse("", "status.phase=Running", &error));
  CHECK(error.find("status.phase") != std::string::npos);
  CHECK_FALSE(Selector::parse("tier in web", "", &error));
  CHECK(error.find("tier in web") != std::string::npos);
  CHECK_FALSE(Selector::parse("=x", "", &error));
}
