// The event recorder's aggregation and rate limit on a fake clock, against a recording transport (the
// real server is in test/integration/runtime/controller/event_recorder_test.cpp).
#include "runtime/controller/event_recorder.h"

#include <catch2/catch.hpp>

#include <condition_variable>
#include <mutex>
#include <regex>
#include <vector>

#include "base/time_format.h"
#include "support/eventually.h"
#include "support/fake_clock.h"
#include "support/log_capture.h"
#include "support/metrics_reader.h"

using namespace std::chrono_literals;
using namespace myop;
using namespace myop::runtime;
using myop::testing::eventually;
using myop::testing::FakeClock;
using myop::testing::LogCapture;

namespace {

// Records requests from the recorder's thread; answers every one with an empty object.
class RecordingTransport final : public kube::Transport {
 public:
  kube::Result<kube::Response> send(const kube::Request& request, std::stop_token) override {
    std::lock_guard lock(mutex_);
    requests_.push_back(request);
    sent_.notify_all();
    return kube::Response{201, "{}", "application/json"};
  }
  kube::Result<kube::StreamEnd> stream(const kube::Request&, const kube::ChunkHandler&, std::stop_token,
                                       const kube::StreamOptions&) override {
    return kube::make_error(kube::Reason::Unknown, "no streams here");
  }
  const std::string& host() const override { return host_; }

  // Waits (bounded, only to turn a hang into a failure) until `count` requests were sent.
  bool await_requests(std::size_t count) {
    std::unique_lock lock(mutex_);
    return sent_.wait_for(lock, 10s, [&] { return requests_.size() >= count; });
  }
  std::vector<kube::Request> requests() {
    std::lock_guard lock(mutex_);
    return requests_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable sent_;
  std::vector<kube::Request> requests_;
  std::string host_ = "test:443";
};

struct Fixture {
  std::shared_ptr<FakeClock> clock = std::make_shared<FakeClock>();
  std::shared_ptr<RecordingTransport> transport = std::make_shared<RecordingTransport>();
  EventSubject subject{"myorg.io/v1alpha1", "MyResource", "team-a", "web", "uid-1", "7"};

  EventRecorderOptions options() {
    EventRecorderOptions result;
    result.reporting_controller = "example.com/test-controller";
    result.reporting_instance = "test";
    result.clock = clock;
    return result;
  }
  std::shared_ptr<kube::Client> client() {
    return std::make_shared<kube::Client>(transport, "event-recorder-test");
  }
};

}  // namespace

TEST_CASE("repeats become a series, patched when the flush interval has passed on the clock",
          "[runtime][events]") {
  Fixture fixture;
  auto options = fixture.options();
  options.series_flush_interval = 30s;
  EventRecorder recorder(fixture.client(), options);
  // Nothing to do: the posting thread sleeps without a timer.
  REQUIRE(fixture.clock->await_deadline(TimePoint::max()));

  const auto created_at = fixture.clock->now();
  const auto first_seen = fixture.clock->wall_now();
  recorder.record(fixture.subject, EventSeverity::warning, "CanaryFailed", "Reconcile", "image pull failed");
  REQUIRE(fixture.transport->await_requests(1));
  auto create = fixture.transport->requests().at(0);
  CHECK(create.method == "POST");
  CHECK(create.path == "/apis/events.k8s.io/v1/namespaces/team-a/events");
  CHECK_THAT(create.body, Catch::Contains("\"eventTime\":\"" + base::format_micro_time(first_seen) + "\""));

  fixture.clock->advance(10s);
  recorder.record(fixture.subject, EventSeverity::warning, "CanaryFailed", "Reconcile", "image pull failed");
  fixture.clock->advance(5s);
  const auto last_seen = fixture.clock->wall_now();
  recorder.record(fixture.subject, EventSeverity::warning, "CanaryFailed", "Reconcile", "image pull failed");
  // The repeats are counted, and the thread sleeps until the series update is due.
  REQUIRE(fixture.clock->await_deadline(created_at + 30s));
  CHECK(fixture.transport->requests().size() == 1);

  fixture.clock->advance(15s);
  REQUIRE(fixture.transport->await_requests(2));
  auto patch = fixture.transport->requests().at(1);
  CHECK(patch.method == "PATCH");
  CHECK_THAT(patch.body, Catch::Contains("\"count\":3"));
  CHECK_THAT(patch.body, Catch::Contains(base::format_micro_time(last_seen)));
  // Nothing pending any more: back to sleeping without a timer.
  REQUIRE(fixture.clock->await_deadline(TimePoint::max()));
  CHECK(fixture.transport->requests().size() == 2);
}

TEST_CASE("events beyond the burst are dropped until the clock refills the bucket", "[runtime][events]") {
  Fixture fixture;
  auto options = fixture.options();
  options.qps = 1.0 / 5;
  options.burst = 1;
  EventRecorder recorder(fixture.client(), options);
  recorder.record(fixture.subject, EventSeverity::normal, "Created", "Reconcile", "first");
  recorder.flush();
  recorder.record(fixture.subject, EventSeverity::normal, "Created", "Reconcile", "second");
  recorder.flush();
  CHECK(fixture.transport->requests().size() == 1);  // the second found no token
  fixture.clock->advance(5s);
  recorder.record(fixture.subject, EventSeverity::normal, "Created", "Reconcile", "third");
  recorder.flush();
  auto requests = fixture.transport->requests();
  REQUIRE(requests.size() == 2);
  CHECK_THAT(requests[1].body, Catch::Contains("\"note\":\"third\""));
}

namespace {

// The `dropped` field of every drop summary so far.
std::vector<int> drop_summaries(const LogCapture& logs) {
  std::vector<int> counts;
  const std::string text = logs.text();
  static const std::regex summary(R"(Events dropped by the rate limit or a full queue dropped=(\d+))");
  for (auto match = std::sregex_iterator(text.begin(), text.end(), summary); match != std::sregex_iterator();
       ++match)
    counts.push_back(std::stoi((*match)[1]));
  return counts;
}

}  // namespace

TEST_CASE("a storm of drops is counted in a metric and summarised in one log line per interval",
          "[runtime][events]") {
  Fixture fixture;
  LogCapture logs;
  auto registry = std::make_shared<prometheus::Registry>();
  auto options = fixture.options();
  options.qps = 1.0 / 5;
  options.burst = 1;
  options.registry = registry;
  options.drop_report_interval = 1min;
  auto dropped = [&](const std::string& reason) {
    return myop::runtime::testing::metric_value(*registry, "event_recorder_dropped_total",
                                                {{"reason", reason}})
        .value_or(-1);
  };
  {
    EventRecorder recorder(fixture.client(), options);
    for (int i = 0; i < 100; ++i)
      recorder.record(fixture.subject, EventSeverity::normal, "Created", "Reconcile",
                      "note " + std::to_string(i));
    REQUIRE(eventually([&] { return dropped("rate_limit") == 99; }, 10s));  // one token, no time passes
    CHECK(fixture.transport->requests().size() == 1);
    CHECK(dropped("queue_full") == 0);
    // The recorder's thread writes the summary after it counts the drop: wait for the line, then
    // check that the other 98 drops added none (the fake clock stands still within the interval).
    REQUIRE(eventually([&] { return !drop_summaries(logs).empty(); }, 10s));
    CHECK(drop_summaries(logs).size() == 1);  // not 99 lines

    for (int i = 0; i < 50; ++i)
      recorder.record(fixture.subject, EventSeverity::warning, "Failed", "Reconcile",
                      "again " + std::to_string(i));
    REQUIRE(eventually([&] { return dropped("rate_limit") == 149; }, 10s));
    CHECK(drop_summaries(logs).size() == 1);  // within the interval: still one line

    fixture.clock->advance(1min);  // the interval passes: the rest is summarised, once
    REQUIRE(eventually([&] { return drop_summaries(logs).size() == 2; }, 10s));
    const auto summaries = drop_summaries(logs);
    CHECK(summaries[0] + summaries[1] == 149);
  }
  CHECK(drop_summaries(logs).size() == 2);  // nothing left to report at shutdown
}

TEST_CASE("a full queue drops with its own reason", "[runtime][events]") {
  Fixture fixture;
  auto registry = std::make_shared<prometheus::Registry>();
  auto options = fixture.options();
  options.max_queued = 0;
  options.registry = registry;
  EventRecorder recorder(fixture.client(), options);
  recorder.record(fixture.subject, EventSeverity::normal, "Created", "Reconcile", "nowhere to go");
  CHECK(myop::runtime::testing::metric_value(*registry, "event_recorder_dropped_total",
                                             {{"reason", "queue_full"}}) == 1);
  recorder.flush();
  CHECK(fixture.transport->requests().empty());
}
