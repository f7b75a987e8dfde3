// Events on the real API server: one Event per distinct occurrence, repeats aggregated in a series.
#include <catch2/catch.hpp>

#include <rapidjson/document.h>

#include "runtime/controller/event_recorder.h"
#include "support/runtime_test_support.h"

using namespace myop;
using namespace myop::runtime;
using namespace myop::runtime::testing;

TEST_CASE("repeated events are aggregated into a series with a count", "[runtime][event_recorder]") {
  testenv::ScopedNamespace ns("rt-events");
  testenv::kubectl_or_fail("create configmap subject -n " + ns.name());
  auto client = admin_client();
  auto subject_json = client->get(kube::resources::config_maps(), ns.name(), "subject");
  REQUIRE(subject_json);
  auto subject = kube::Object::copy_of(subject_json.value());

  EventRecorderOptions options;
  options.reporting_controller = "myorg.io/my-operator";
  options.reporting_instance = "integration-test";
  EventRecorder recorder(client, options);
  for (int i = 0; i < 5; ++i) {
    recorder.record(EventSubject::of(subject), EventSeverity::warning, "CleanupFailed", "Cleanup",
                    "cannot delete child web: forbidden");
  }
  recorder.record(EventSubject::of(subject), EventSeverity::normal, "Available", "Reconcile", "ready");
  recorder.flush();

  auto events = client->list(kube::resources::events(), ns.name());
  REQUIRE(events);
  int warning_events = 0;
  int normal_events = 0;
  for (const auto& event : events.value()["items"].GetArray()) {
    const std::string reason = event["reason"].GetString();
    CHECK(std::string(event["regarding"]["name"].GetString()) == "subject");
    CHECK(std::string(event["reportingController"].GetString()) == "myorg.io/my-operator");
    CHECK(std::string(event["eventTime"].GetString()).find('.') != std::string::npos);  // MicroTime
    if (reason == "CleanupFailed") {
      ++warning_events;
      CHECK(std::string(event["type"].GetString()) == "Warning");
      REQUIRE(event.HasMember("series"));
      CHECK(event["series"]["count"].GetInt() == 5);
    } else if (reason == "Available") {
      ++normal_events;
      CHECK_FALSE(event.HasMember("series"));
    }
  }
  CHECK(warning_events == 1);
  CHECK(normal_events == 1);
}
