// The watcher's state machine against a scripted WatchSource (the real server is in
// test/integration/kube/watch_test.cpp).
#include "kube/watch.h"

#include <catch2/catch.hpp>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <future>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include "support/fake_clock.h"

using namespace myop::kube;
using myop::testing::FakeClock;
using namespace std::chrono_literals;

namespace {

struct ScriptedWatch {
  std::vector<std::string> chunks;
  std::variant<StreamEnd, Error> end = StreamEnd::ServerClosed;
};

// Answers list and watch calls from a script, records the requests, and stops the watcher when the
// script runs out (so every test ends by itself).
class ScriptedSource final : public WatchSource {
 public:
  explicit ScriptedSource(std::stop_source& stopper) : stopper_(stopper) {}

  std::deque<std::variant<std::string, Error>> lists;
  std::deque<ScriptedWatch> watches;
  std::vector<ListOptions> list_requests;
  std::vector<WatchOptions> watch_requests;
  // When set, a call after the script ran out blocks until stopped instead of stopping the watcher,
  // and `blocking` is fulfilled once it does.
  bool block_when_done = false;
  std::promise<void> blocking;

  Result<rapidjson::Document> list(const ListOptions& options, std::stop_token stop) override {
    list_requests.push_back(options);
    if (lists.empty()) return finish(stop);
    auto answer = std::move(lists.front());
    lists.pop_front();
    if (auto* error = std::get_if<Error>(&answer)) return *error;
    rapidjson::Document document;
    document.Parse(std::get<std::string>(answer).c_str());
    REQUIRE_FALSE(document.HasParseError());
    return document;
  }

  Result<StreamEnd> watch(const WatchOptions& options, const ChunkHandler& on_chunk,
                          std::stop_token stop) override {
    watch_requests.push_back(options);
    if (watches.empty()) {
      auto finished = finish(stop);
      return finished.error();
    }
    ScriptedWatch script = std::move(watches.front());
    watches.pop_front();
    for (const auto& chunk : script.chunks) {
      if (!on_chunk(chunk)) return StreamEnd::StoppedByHandler;
    }
    if (auto* error = std::get_if<Error>(&script.end)) return *error;
    return std::get<StreamEnd>(script.end);
  }

  std::string describe() const override { return "configmaps in namespace test"; }

 private:
  Result<rapidjson::Document> finish(std::stop_token stop) {
    if (block_when_done) {
      blocking.set_value();
      std::mutex mutex;
      std::condition_variable_any wake;
      std::unique_lock lock(mutex);
      wake.wait(lock, stop, [] { return false; });
    } else {
      stopper_.request_stop();
    }
    return make_error(Reason::Cancelled, "cancelled");
  }

  std::stop_source& stopper_;
};

std::string event_line(const std::string& type, const std::string& name, const std::string& resource_version,
                       const std::string& extra_metadata = "") {
  return R"({"type":")" + type + R"(","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":")" +
         name + R"(","namespace":"test","resourceVersion":")" + resource_version + "\"" + extra_metadata +
         "}}}\n";
}

std::string bookmark_line(const std::string& resource_version, bool initial_events_end = false) {
  return R"({"type":"BOOKMARK","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"resourceVersion":")" +
         resource_version + "\"" +
         (initial_events_end ? R"(,"annotations":{"k8s.io/initial-events-end":"true"})" : "") + "}}}\n";
}

std::string gone_line() {
  return R"json({"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","status":"Failure","message":"too old resource version: 5 (8)","reason":"Expired","code":410}})json"
         "\n";
}

// Cuts a stream into chunks of `size` bytes, so events straddle chunk boundaries.
std::vector<std::string> chunked(const std::string& stream, std::size_t size) {
  std::vector<std::string> chunks;
  for (std::size_t offset = 0; offset < stream.size(); offset += size)
    chunks.push_back(stream.substr(offset, size));
  return chunks;
}

std::string list_page(const std::string& resource_version, const std::string& continue_token,
                      const std::vector<std::string>& names) {
  std::string items;
  for (const auto& name : names) {
    if (!items.empty()) items += ",";
    items += R"({"metadata":{"name":")" + name + R"(","namespace":"test","resourceVersion":")" +
             resource_version + R"("},"data":{"k":"v"}})";
  }
  return R"({"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":")" + resource_version +
         R"(","continue":")" + continue_token + R"("},"items":[)" + items + "]}";
}

// Backoff waits pass at once: the fake clock jumps to their end.
WatcherOptions fast_options() {
  WatcherOptions options;
  options.backoff.initial = 1ms;
  options.backoff.maximum = 4ms;
  options.random_seed = 1;
  auto clock = std::make_shared<FakeClock>();
  clock->set_auto_advance(true);
  options.clock = clock;
  return options;
}

// "InitApply a 1" and the like, for comparing whole sequences.
struct Recorder {
  std::vector<std::string> events;
  std::vector<std::string> kinds;
  void operator()(WatcherEvent event) {
    std::string line(watcher_event_type_name(event.type));
    if (event.object) {
      line += " " + std::string(event.object->name());
      kinds.emplace_back(event.object->view().kind());
    }
    if (!event.resource_version.empty()) line += " " + event.resource_version;
    events.push_back(line);
  }
};

}  // namespace

TEST_CASE("watcher: WatchList initial state, then watching, then resuming", "[kube][watch]") {
  std::stop_source stopper;
  auto source = std::make_shared<ScriptedSource>(stopper);
  const std::string first_stream = event_line("ADDED", "a", "8") + event_line("ADDED", "b", "9") +
                                   bookmark_line("10", true) + event_line("MODIFIED", "a", "11") +
                                   event_line("DELETED", "b", "12") + bookmark_line("13");
  source->watches.push_back({chunked(first_stream, 7), StreamEnd::ServerClosed});
  source->watches.push_back({{event_line("ADDED", "c", "14")}, StreamEnd::ServerClosed});

  Watcher watcher(source, fast_options());
  Recorder recorder;
  auto result = watcher.run(std::ref(recorder), stopper.get_token());
  REQUIRE(result.ok());

  CHECK(recorder.events == std::vector<std::string>{"InitStart", "InitApply a 8", "InitApply b 9",
                                                    "InitDone 10", "Apply a 11", "Delete b 12", "Bookmark 13",
                                                    "Apply c 14"});
  REQUIRE(source->watch_requests.size() == 3);
  const auto& initial = source->watch_requests[0];
  CHECK(initial.send_initial_events);
  CHECK(initial.resource_version_match == "NotOlderThan");
  CHECK(initial.resource_version.empty());
  CHECK(initial.allow_bookmarks);
  REQUIRE(initial.timeout_seconds.has_value());
  CHECK(*initial.timeout_seconds >= 300);
  CHECK(*initial.timeout_seconds <= 600);
  // The server ended the first watch: the next resumes from the last bookmark, without a relist.
  CHECK_FALSE(source->watch_requests[1].send_initial_events);
  CHECK(source->watch_requests[1].resource_version == "13");
  CHECK(source->watch_requests[1].allow_bookmarks);
  CHECK(source->watch_requests[2].resource_version == "14");
  CHECK(source->list_requests.empty());
  CHECK(watcher.watch_list_supported());
}

TEST_CASE("watcher: falls back to a paginated LIST when the server refuses WatchList", "[kube][watch]") {
  std::stop_source stopper;
  auto source = std::make_shared<ScriptedSource>(stopper);
  source->watches.push_back(
      {{}, make_error(Reason::Invalid, "ListOptions is invalid: sendInitialEvents: Forbidden", 422)});
  source->lists.push_back(list_page("20", "token-1", {"a", "b"}));
  source->lists.push_back(list_page("20", "", {"c"}));
  source->watches.push_back({{event_line("ADDED", "d", "21")}, StreamEnd::ServerClosed});

  WatcherOptions options = fast_options();
  options.page_size = 2;
  int errors_reported = 0;
  options.on_error = [&](const Error&, std::chrono::milliseconds) { ++errors_reported; };
  Watcher watcher(source, options);
  Recorder recorder;
  REQUIRE(watcher.run(std::ref(recorder), stopper.get_token()).ok());

  CHECK(recorder.events == std::vector<std::string>{"InitStart", "InitStart", "InitApply a 20",
                                                    "InitApply b 20", "InitApply c 20", "InitDone 20",
                                                    "Apply d 21"});
  // LIST items carry no kind; the watcher fills it in from the List's kind.
  CHECK(recorder.kinds == std::vector<std::string>{"ConfigMap", "ConfigMap", "ConfigMap", "ConfigMap"});
  CHECK_FALSE(watcher.watch_list_supported());
  CHECK(errors_reported == 0);  // a refusal of WatchList is a fallback, not a failure
  REQUIRE(source->list_requests.size() == 2);
  CHECK(source->list_requests[0].limit == std::optional<std::int64_t>(2));
  CHECK(source->list_requests[0].continue_token.empty());
  CHECK(source->list_requests[0].resource_version.empty());  // a consistent read, never stale
  CHECK(source->list_requests[1].continue_token == "token-1");
  REQUIRE(source->watch_requests.size() >= 2);
  CHECK(source->watch_requests[1].resource_version == "20");
  CHECK_FALSE(source->watch_requests[1].send_initial_events);
}

TEST_CASE("watcher: 410 Gone while watching leads to a relist", "[kube][watch]") {
  std::stop_source stopper;
  auto source = std::make_shared<ScriptedSource>(stopper);
  source->lists.push_back(list_page("5", "", {"a"}));
  source->watches.push_back({{event_line("ADDED", "x", "6") + gone_line()}, StreamEnd::ServerClosed});
  source->lists.push_back(list_page("9", "", {"a", "x"}));
  source->watches.push_back({{event_line("MODIFIED", "x", "10")}, StreamEnd::ServerClosed});

  WatcherOptions options = fast_options();
  options.initial_list_mode = InitialListMode::PaginatedList;
  std::vector<Reason> reported;
  options.on_error = [&](const Error& error, std::chrono::milliseconds) { reported.push_back(error.reason); };
  Watcher watcher(source, options);
  Recorder recorder;
  REQUIRE(watcher.run(std::ref(recorder), stopper.get_token()).ok());

  CHECK(recorder.events == std::vector<std::string>{"InitStart", "InitApply a 5", "InitDone 5", "Apply x 6",
                                                    "InitStart", "InitApply a 9", "InitApply x 9",
                                                    "InitDone 9", "Apply x 10"});
  REQUIRE_FALSE(reported.empty());
  CHECK(reported.front() == Reason::Gone);
  REQUIRE(source->watch_requests.size() >= 2);
  CHECK(source->watch_requests[0].resource_version == "5");
  CHECK(source->watch_requests[1].resource_version == "9");
  CHECK(source->list_requests.size() == 2);
}

TEST_CASE("watcher: a broken connection resumes from the last resourceVersion without relisting",
          "[kube][watch]") {
  std::stop_source stopper;
  auto source = std::make_shared<ScriptedSource>(stopper);
  source->watches.push_back({{bookmark_line("3", true), event_line("ADDED", "a", "4")},
                             make_error(Reason::Transport, "connection reset by peer")});
  source->watches.push_back({{}, make_error(Reason::ServiceUnavailable, "apiserver shutting down", 503)});
  source->watches.push_back({{"{\"type\":\"ADDED\",\"obj", "ect\":{garbage\n"}, StreamEnd::ServerClosed});
  source->watches.push_back({{event_line("DELETED", "a", "5")}, StreamEnd::ServerClosed});

  std::vector<Reason> reported;
  WatcherOptions options = fast_options();
  options.on_error = [&](const Error& error, std::chrono::milliseconds) { reported.push_back(error.reason); };
  Watcher watcher(source, options);
  Recorder recorder;
  REQUIRE(watcher.run(std::ref(recorder), stopper.get_token()).ok());

  CHECK(recorder.events == std::vector<std::string>{"InitStart", "InitDone 3", "Apply a 4", "Delete a 5"});
  CHECK(reported == std::vector<Reason>{Reason::Transport, Reason::ServiceUnavailable, Reason::Unknown});
  REQUIRE(source->watch_requests.size() >= 4);
  CHECK(source->watch_requests[1].resource_version == "4");
  CHECK(source->watch_requests[2].resource_version == "4");
  CHECK(source->watch_requests[3].resource_version == "4");  // the malformed event moved nothing
  CHECK(source->list_requests.empty());
  CHECK(watcher.resource_version() == "5");
}

TEST_CASE("watcher: an initial stream that breaks starts the initial state over", "[kube][watch]") {
  std::stop_source stopper;
  auto source = std::make_shared<ScriptedSource>(stopper);
  source->watches.push_back({{event_line("ADDED", "a", "1")}, make_error(Reason::Transport, "reset")});
  source->watches.push_back({{event_line("ADDED", "a", "1")}, StreamEnd::ServerClosed});  // no end bookmark
  source->watches.push_back(
      {{event_line("ADDED", "a", "1") + bookmark_line("2", true)}, StreamEnd::ServerClosed});

  Watcher watcher(source, fast_options());
  Recorder recorder;
  REQUIRE(watcher.run(std::ref(recorder), stopper.get_token()).ok());
  CHECK(recorder.events == std::vector<std::string>{"InitStart", "InitApply a 1", "InitStart",
                                                    "InitApply a 1", "InitStart", "InitApply a 1",
                                                    "InitDone 2"});
  REQUIRE(source->watch_requests.size() >= 3);
  CHECK(source->watch_requests[1].send_initial_events);
  CHECK(source->watch_requests[2].send_initial_events);
  CHECK(watcher.watch_list_supported());  // a broken stream is not a refusal
}

TEST_CASE("watcher: a failing LIST page restarts the listing", "[kube][watch]") {
  std::stop_source stopper;
  auto source = std::make_shared<ScriptedSource>(stopper);
  source->lists.push_back(list_page("7", "token", {"a"}));
  source->lists.push_back(make_error(Reason::Gone, "the continue token expired", 410));
  source->lists.push_back(list_page("9", "", {"a", "b"}));

  WatcherOptions options = fast_options();
  options.initial_list_mode = InitialListMode::PaginatedList;
  Watcher watcher(source, options);
  Recorder recorder;
  REQUIRE(watcher.run(std::ref(recorder), stopper.get_token()).ok());
  CHECK(recorder.events == std::vector<std::string>{"InitStart", "InitApply a 7", "InitStart",
                                                    "InitApply a 9", "InitApply b 9", "InitDone 9"});
  REQUIRE(source->list_requests.size() == 3);
  CHECK(source->list_requests[2].continue_token.empty());
}

TEST_CASE("watcher: stops within a second while waiting to reconnect or while streaming", "[kube][watch]") {
  SECTION("during a long backoff") {
    std::stop_source stopper;
    auto source = std::make_shared<ScriptedSource>(stopper);
    for (int attempt = 0; attempt < 10; ++attempt) {
      source->watches.push_back({{}, make_error(Reason::Transport, "connection refused")});
    }
    WatcherOptions options = fast_options();
    options.backoff.initial = 20s;
    options.backoff.maximum = 30s;
    auto clock = std::make_shared<FakeClock>();  // time stands still: the backoff never ends by itself
    options.clock = clock;
    Watcher watcher(source, options);
    bool waited = false;
    myop::base::Duration wait{};
    std::chrono::steady_clock::time_point stopped_at;
    std::jthread canceller([&] {
      waited = clock->await_waiters(1);
      if (waited) wait = clock->deadlines().front() - clock->now();
      stopped_at = std::chrono::steady_clock::now();
      stopper.request_stop();
    });
    REQUIRE(watcher.run([](WatcherEvent) {}, stopper.get_token()).ok());
    canceller.join();
    CHECK(std::chrono::steady_clock::now() - stopped_at < 1s);
    CHECK(source->watch_requests.size() == 1);
    // It was waiting out the first backoff: 20 s, up to 20 % less.
    REQUIRE(waited);
    CHECK(wait <= 20s);
    CHECK(wait >= 16s);
  }
  SECTION("while a watch is open") {
    std::stop_source stopper;
    auto source = std::make_shared<ScriptedSource>(stopper);
    source->block_when_done = true;
    Watcher watcher(source, fast_options());
    std::chrono::steady_clock::time_point stopped_at;
    std::jthread canceller([&] {
      source->blocking.get_future().wait();
      stopped_at = std::chrono::steady_clock::now();
      stopper.request_stop();
    });
    REQUIRE(watcher.run([](WatcherEvent) {}, stopper.get_token()).ok());
    canceller.join();
    CHECK(std::chrono::steady_clock::now() - stopped_at < 1s);
  }
}

TEST_CASE("watcher: failures wait the backoff on the injected clock", "[kube][watch]") {
  std::stop_source stopper;
  auto source = std::make_shared<ScriptedSource>(stopper);
  for (int attempt = 0; attempt < 3; ++attempt) {
    source->watches.push_back({{}, make_error(Reason::Transport, "connection refused")});
  }
  WatcherOptions options = fast_options();
  options.backoff = {1s, 4s, 2.0, 0.0, myop::base::JitterDirection::down};
  auto clock = std::make_shared<FakeClock>();
  clock->set_auto_advance(true);
  options.clock = clock;
  std::vector<std::chrono::milliseconds> waits;
  options.on_error = [&](const Error&, std::chrono::milliseconds retry_in) { waits.push_back(retry_in); };
  const auto start = clock->now();
  Watcher watcher(source, options);
  REQUIRE(watcher.run([](WatcherEvent) {}, stopper.get_token()).ok());
  CHECK(waits == std::vector<std::chrono::milliseconds>{1s, 2s, 4s});
  CHECK(clock->now() - start == 7s);  // slept exactly those, on the injected clock
  CHECK(source->watch_requests.size() == 4);
}

TEST_CASE("watcher: a throwing handler ends run with an error, not a crash", "[kube][watch]") {
  std::stop_source stopper;
  auto source = std::make_shared<ScriptedSource>(stopper);
  source->watches.push_back(
      {{event_line("ADDED", "a", "1") + bookmark_line("2", true)}, StreamEnd::ServerClosed});
  Watcher watcher(source, fast_options());
  auto result = watcher.run(
      [](WatcherEvent event) {
        if (event.type == WatcherEventType::InitApply) throw std::runtime_error("cache is broken");
      },
      stopper.get_token());
  REQUIRE_FALSE(result.ok());
  CHECK(result.error().message.find("cache is broken") != std::string::npos);
}

TEST_CASE("watcher: timeoutSeconds is random within 5 to 10 minutes, whatever the stall timeout",
          "[kube][watch]") {
  std::stop_source stopper;
  auto source = std::make_shared<ScriptedSource>(stopper);
  {
    Watcher watcher(source, fast_options());
    std::set<int> seen;
    for (int draw = 0; draw < 200; ++draw) {
      const int seconds = watcher.next_watch_timeout_seconds();
      CHECK(seconds >= 300);
      CHECK(seconds <= 600);
      seen.insert(seconds);
    }
    CHECK(seen.size() > 50);
  }
  {
    // A healthy watch gets a bookmark every minute, so a short stall timeout does not shorten watches.
    WatcherOptions options = fast_options();
    options.stall_timeout = 70s;
    Watcher watcher(source, options);
    for (int draw = 0; draw < 50; ++draw) CHECK(watcher.next_watch_timeout_seconds() >= 300);
  }
}

TEST_CASE("watcher: a stalled watch is dropped after the stall timeout and resumed without a relist",
          "[kube][watch]") {
  std::stop_source stopper;
  auto source = std::make_shared<ScriptedSource>(stopper);
  const std::string initial = event_line("ADDED", "a", "8") + bookmark_line("9", true);
  // Events, then silence: the transport's idle timeout ends the stream (as it does for a stalled one).
  source->watches.push_back({{initial, event_line("MODIFIED", "a", "10")},
                             make_error(Reason::Timeout, "no data on /api/v1/configmaps for 70000 ms")});
  source->watches.push_back({{event_line("MODIFIED", "a", "12")}, StreamEnd::ServerClosed});

  WatcherOptions options = fast_options();
  options.stall_timeout = 70s;
  std::vector<Error> reported;
  options.on_error = [&](const Error& error, std::chrono::milliseconds) { reported.push_back(error); };
  Watcher watcher(source, options);
  Recorder recorder;
  REQUIRE(watcher.run(std::ref(recorder), stopper.get_token()).ok());

  CHECK(recorder.events ==
        std::vector<std::string>{"InitStart", "InitApply a 8", "InitDone 9", "Apply a 10", "Apply a 12"});
  REQUIRE(source->watch_requests.size() >= 2);
  for (const auto& request : source->watch_requests) CHECK(request.stream.idle_timeout == 70s);
  // Resumed from the last event before the stall: an event sent into the dead connection comes again.
  CHECK_FALSE(source->watch_requests[1].send_initial_events);
  CHECK(source->watch_requests[1].resource_version == "10");
  CHECK(source->list_requests.empty());
  REQUIRE(reported.size() == 1);
  CHECK(reported[0].reason == Reason::Timeout);
  CHECK(reported[0].message.find("stalled: no event and no bookmark for 70 s") != std::string::npos);
  CHECK(reported[0].message.find("resourceVersion 10") != std::string::npos);
}

TEST_CASE("watcher: on_stall is called for each watch dropped as stalled and for no other end or error",
          "[kube][watch]") {
  std::stop_source stopper;
  auto source = std::make_shared<ScriptedSource>(stopper);
  const std::string initial = event_line("ADDED", "a", "8") + bookmark_line("9", true);
  // An ordinary end (the server's timeoutSeconds), a broken stream, a stall, then silence again.
  source->watches.push_back({{initial, event_line("MODIFIED", "a", "10")}, StreamEnd::ServerClosed});
  source->watches.push_back(
      {{event_line("MODIFIED", "a", "11")}, make_error(Reason::Transport, "the stream broke: reset")});
  source->watches.push_back({{event_line("MODIFIED", "a", "12")},
                             make_error(Reason::Timeout, "no data on /api/v1/configmaps for 70000 ms")});
  source->watches.push_back({{event_line("MODIFIED", "a", "13")}, StreamEnd::ServerClosed});
  source->watches.push_back({{event_line("MODIFIED", "a", "14")},
                             make_error(Reason::Timeout, "no data on /api/v1/configmaps for 70000 ms")});

  WatcherOptions options = fast_options();
  options.stall_timeout = 70s;
  std::vector<std::string> calls;
  options.on_stall = [&] { calls.push_back("stall"); };
  options.on_error = [&](const Error& error, std::chrono::milliseconds) {
    calls.push_back("error " + std::string(reason_name(error.reason)));
  };
  Watcher watcher(source, options);
  Recorder recorder;
  REQUIRE(watcher.run(std::ref(recorder), stopper.get_token()).ok());

  CHECK(recorder.events == std::vector<std::string>{"InitStart", "InitApply a 8", "InitDone 9", "Apply a 10",
                                                    "Apply a 11", "Apply a 12", "Apply a 13", "Apply a 14"});
  // Each stall once, before its error is reported; the clean end and the broken stream are no stalls.
  CHECK(calls ==
        std::vector<std::string>{"error Transport", "stall", "error Timeout", "stall", "error Timeout"});
}
