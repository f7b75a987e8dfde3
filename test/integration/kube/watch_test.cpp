// Watches against the real control plane: the wire events, the watcher's initial state (WatchList and
// paginated LIST), a 410 after etcd compaction, and an API server restart that must not lose events.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "kube/object.h"
#include "kube/watch.h"
#include "kube/watch_parser.h"
#include "kube/watch_source.h"
#include "kube_test_support.h"
#include "support/testenv.h"

using namespace myop::kube;
namespace testenv = myop::testenv;
using namespace std::chrono_literals;

namespace {

// What the watcher has told us, kept the way a cache would keep it: name -> resourceVersion.
class WatchedState {
 public:
  void handle(WatcherEvent event) {
    std::lock_guard lock(mutex_);
    history_.push_back(std::string(watcher_event_type_name(event.type)) +
                       (event.object ? " " + std::string(event.object->name()) : std::string()));
    switch (event.type) {
      case WatcherEventType::InitStart:
        ++initial_states_started_;
        building_.clear();
        break;
      case WatcherEventType::InitApply:
        building_[std::string(event.object->name())] = std::string(event.object->resource_version());
        break;
      case WatcherEventType::InitDone:
        ++initial_states_done_;
        objects_ = building_;
        break;
      case WatcherEventType::Apply:
        objects_[std::string(event.object->name())] = std::string(event.object->resource_version());
        break;
      case WatcherEventType::Delete:
        ++deletes_;
        objects_.erase(std::string(event.object->name()));
        break;
      case WatcherEventType::Bookmark:
        ++bookmarks_;
        break;
    }
    changed_.notify_all();
  }

  // Waits until `condition` holds (checked under the lock) or `timeout` passes.
  bool wait_for(const std::function<bool(const WatchedState&)>& condition,
                std::chrono::milliseconds timeout) {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, timeout, [&] { return condition(*this); });
  }

  std::map<std::string, std::string> objects() const {
    std::lock_guard lock(mutex_);
    return objects_;
  }
  std::string history() const {
    std::lock_guard lock(mutex_);
    std::string text;
    for (const auto& line : history_) text += line + "; ";
    return text;
  }

  // Read under the lock by wait_for's condition.
  std::map<std::string, std::string> objects_;
  int initial_states_started_ = 0;
  int initial_states_done_ = 0;
  int deletes_ = 0;
  int bookmarks_ = 0;

 private:
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::map<std::string, std::string> building_;
  std::vector<std::string> history_;
};

// A WatchSource whose new connections can be held back: a partition between this watcher and the API
// server, while everyone else (kubectl) still gets through. An open stream is not affected.
// Counts the watches it opened and those that have ended: a witness that a watch ended (a server-side
// timeout) and the next one was opened.
class CountingSource final : public WatchSource {
 public:
  explicit CountingSource(std::shared_ptr<WatchSource> inner) : inner_(std::move(inner)) {}

  Result<rapidjson::Document> list(const ListOptions& options, std::stop_token stop) override {
    return inner_->list(options, stop);
  }
  Result<StreamEnd> watch(const WatchOptions& options, const ChunkHandler& on_chunk,
                          std::stop_token stop) override {
    ++opened_;
    auto ended = inner_->watch(options, on_chunk, stop);
    ++ended_;
    return ended;
  }
  std::string describe() const override { return inner_->describe(); }

  int opened() const { return opened_.load(); }
  int ended() const { return ended_.load(); }

 private:
  std::shared_ptr<WatchSource> inner_;
  std::atomic<int> opened_{0};
  std::atomic<int> ended_{0};
};

class GatedSource final : public WatchSource {
 public:
  explicit GatedSource(std::shared_ptr<WatchSource> inner) : inner_(std::move(inner)) {}

  void close() {
    std::lock_guard lock(mutex_);
    open_ = false;
  }
  void open() {
    {
      std::lock_guard lock(mutex_);
      open_ = true;
    }
    wake_.notify_all();
  }
  int waiting_connections() const { return waiting_.load(); }

  Result<rapidjson::Document> list(const ListOptions& options, std::stop_token stop) override {
    if (!pass(stop)) return make_error(Reason::Cancelled, "cancelled at the gate");
    return inner_->list(options, stop);
  }
  Result<StreamEnd> watch(const WatchOptions& options, const ChunkHandler& on_chunk,
                          std::stop_token stop) override {
    if (!pass(stop)) return make_error(Reason::Cancelled, "cancelled at the gate");
    return inner_->watch(options, on_chunk, stop);
  }
  std::string describe() const override { return inner_->describe(); }

 private:
  bool pass(std::stop_token stop) {
    std::unique_lock lock(mutex_);
    ++waiting_;
    const bool opened = wake_.wait(lock, stop, [this] { return open_; });
    --waiting_;
    return opened;
  }

  std::shared_ptr<WatchSource> inner_;
  std::mutex mutex_;
  std::condition_variable_any wake_;
  bool open_ = true;
  std::atomic<int> waiting_{0};
};

std::map<std::string, std::string> fresh_list(Client& client, const std::string& namespace_name) {
  auto list = client.list_all(resources::config_maps(), namespace_name);
  if (!list) FAIL("LIST failed: " << list.error().to_string());
  std::map<std::string, std::string> result;
  for (const auto& item : list.value()["items"].GetArray()) {
    const ObjectView view(item);
    result[std::string(view.name())] = std::string(view.resource_version());
  }
  return result;
}

void create_config_map(Client& client, const std::string& namespace_name, const std::string& name) {
  auto body = testing::parse_json(R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":")" + name +
                                  R"("},"data":{"step":"created"}})");
  auto created = client.create(resources::config_maps(), namespace_name, body);
  if (!created) FAIL("create " << name << ": " << created.error().to_string());
}

void change_config_map(Client& client, const std::string& namespace_name, const std::string& name,
                       const std::string& step) {
  auto patched = client.patch(resources::config_maps(), namespace_name, name, PatchType::Merge,
                              R"({"data":{"step":")" + step + R"("}})");
  if (!patched) FAIL("patch " << name << ": " << patched.error().to_string());
}

void delete_config_map(Client& client, const std::string& namespace_name, const std::string& name) {
  auto removed = client.remove(resources::config_maps(), namespace_name, name);
  if (!removed) FAIL("delete " << name << ": " << removed.error().to_string());
}

// Waits until the watcher's view equals a fresh LIST. Other writers (kube-controller-manager publishes
// kube-root-ca.crt into new namespaces) may change the namespace meanwhile, so the LIST is taken again.
bool converges_to_fresh_list(WatchedState& state, Client& client, const std::string& namespace_name,
                             std::chrono::seconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    const auto expected = fresh_list(client, namespace_name);
    if (state.wait_for([&](const WatchedState& s) { return s.objects_ == expected; }, 3s)) return true;
  }
  return false;
}

// Runs a Watcher on its own thread; stops and joins it (and checks it stopped promptly) on destruction.
class RunningWatcher {
 public:
  RunningWatcher(std::shared_ptr<WatchSource> source, WatcherOptions options, WatchedState& state)
      : watcher_(std::move(source), std::move(options)) {
    thread_ = std::jthread([this, &state](std::stop_token stop) {
      result_ = watcher_.run([&state](WatcherEvent event) { state.handle(std::move(event)); }, stop);
    });
  }
  ~RunningWatcher() { stop(); }

  // Returns how long the watcher took to return after the stop request.
  std::chrono::milliseconds stop() {
    if (!thread_.joinable()) return 0ms;
    const auto started = std::chrono::steady_clock::now();
    thread_.request_stop();
    thread_.join();
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started);
  }
  Watcher& watcher() { return watcher_; }
  const Result<void>& result() const { return result_; }

 private:
  Watcher watcher_;
  Result<void> result_;
  std::jthread thread_;
};

WatcherOptions quick_options(const std::function<void(const Error&)>& on_error = {}) {
  WatcherOptions options;
  // Short server-side timeouts: the API server sends a bookmark 2 s before a watch's deadline, and each
  // reconnect exercises the resume path.
  options.minimum_watch_timeout = 6s;
  options.maximum_watch_timeout = 8s;
  options.backoff.initial = 200ms;
  options.backoff.maximum = 2s;
  if (on_error)
    options.on_error = [on_error](const Error& error, std::chrono::milliseconds) { on_error(error); };
  return options;
}

}  // namespace

TEST_CASE("a watch stream delivers ADDED, MODIFIED, DELETED and BOOKMARK", "[kube][watch]") {
  testenv::ScopedNamespace ns("watch-wire");
  auto client = testing::admin_client();
  ListOptions list_options;
  auto start = client.list(resources::config_maps(), ns.name(), list_options);
  REQUIRE(start.ok());
  const std::string start_version = testing::string_at(start.value(), {"metadata", "resourceVersion"});
  REQUIRE_FALSE(start_version.empty());

  // The API server sends a BOOKMARK about 2 s before a watch's deadline and about once a minute; the
  // pre-deadline one does not always come, so resume (as a client would) until one did.
  std::mutex mutex;
  std::vector<std::string> events;
  std::optional<Error> stream_error;
  std::optional<StreamEnd> stream_end;
  std::jthread watching([&](std::stop_token stop) {
    std::string resource_version = start_version;
    bool bookmark_seen = false;
    for (int attempt = 0; attempt < 6 && !bookmark_seen && !stop.stop_requested(); ++attempt) {
      WatchOptions watch_options;
      watch_options.resource_version = resource_version;
      watch_options.allow_bookmarks = true;
      watch_options.timeout_seconds = 15;  // the server ends it
      WatchParser parser;
      // Protobuf for ConfigMaps (the client asks for it), JSON were the server to answer JSON.
      watch_options.stream.on_open = [&parser](std::string_view content_type) {
        parser.set_encoding(watch_encoding_of(content_type));
      };
      auto ended = client.watch(
          resources::config_maps(), ns.name(), watch_options,
          [&](std::string_view chunk) {
            parser.append(chunk);
            while (auto item = parser.next()) {
              std::lock_guard lock(mutex);
              if (!item->ok()) {
                stream_error = item->error();
                return false;
              }
              const auto& event = item->value();
              events.push_back(std::string(watch_event_type_name(event.type)) + " " +
                               std::string(event.object.name()) +
                               (event.resource_version().empty() ? " no-version" : ""));
              if (!event.resource_version().empty()) resource_version = std::string(event.resource_version());
              const bool deleted_seen =
                  std::find(events.begin(), events.end(), "DELETED first") != events.end();
              if (event.type == WatchEventType::Bookmark && deleted_seen) {
                bookmark_seen = true;
                return false;
              }
            }
            return true;
          },
          stop);
      std::lock_guard lock(mutex);
      if (!ended.ok()) {
        stream_error = ended.error();
        return;
      }
      stream_end = ended.value();
    }
  });

  create_config_map(client, ns.name(), "first");
  change_config_map(client, ns.name(), "first", "changed");
  delete_config_map(client, ns.name(), "first");
  watching.join();

  std::lock_guard lock(mutex);
  INFO("events: " << Catch::Detail::stringify(events));
  REQUIRE_FALSE(stream_error.has_value());
  REQUIRE(stream_end.has_value());  // ended by the server's timeout or by us after the bookmark
  std::vector<std::string> ours;    // kube-controller-manager may add kube-root-ca.crt meanwhile
  std::copy_if(events.begin(), events.end(), std::back_inserter(ours),
               [](const std::string& event) { return event.ends_with(" first"); });
  CHECK(ours == std::vector<std::string>{"ADDED first", "MODIFIED first", "DELETED first"});
  CHECK(std::count(events.begin(), events.end(), "BOOKMARK ") >= 1);  // a bookmark names no object
}

TEST_CASE("the body bytes of responses and watch streams reach the metrics observer",
          "[kube][watch][metrics]") {
  testenv::ScopedNamespace ns("watch-bytes");
  auto metrics = std::make_shared<testing::RecordingMetrics>();
  TransportOptions transport_options;
  transport_options.metrics = metrics;
  auto client = testing::client_for(testing::admin_config(), transport_options);
  const std::string value(4096, 'x');
  const auto object =
      testing::parse_json(R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"big"},)"
                          R"("data":{"v":")" +
                          value + R"("}})");
  REQUIRE(client.create(resources::config_maps(), ns.name(), object).ok());
  const std::size_t after_create = metrics->received(ReceivedKind::response);
  CHECK(after_create > value.size());  // the created object came back
  REQUIRE(client.list(resources::config_maps(), ns.name(), ListOptions{}).ok());
  CHECK(metrics->received(ReceivedKind::response) > after_create + value.size());
  CHECK(metrics->received(ReceivedKind::stream) == 0);

  // From resourceVersion 0 the server starts with an ADDED event per object: ours is 4 KiB.
  std::size_t seen_by_handler = 0;
  WatchParser parser;
  WatchOptions watch_options;
  watch_options.resource_version = "0";
  watch_options.stream.on_open = [&parser](std::string_view content_type) {
    parser.set_encoding(watch_encoding_of(content_type));
  };
  auto ended = client.watch(resources::config_maps(), ns.name(), watch_options, [&](std::string_view chunk) {
    seen_by_handler += chunk.size();
    parser.append(chunk);
    while (auto item = parser.next()) {
      if (item->ok() && item->value().object.name() == "big") return false;
    }
    return true;
  });
  REQUIRE(ended.ok());
  CHECK(seen_by_handler > value.size());
  CHECK(metrics->received(ReceivedKind::stream) == seen_by_handler);
}

TEST_CASE("the watcher builds the initial state and follows changes", "[kube][watch]") {
  testenv::ScopedNamespace ns("watcher");
  auto client = std::make_shared<Client>(testing::admin_client());
  for (int index = 0; index < 5; ++index)
    create_config_map(*client, ns.name(), "before-" + std::to_string(index));

  auto mode = GENERATE(InitialListMode::Auto, InitialListMode::PaginatedList);
  INFO("initial list mode " << (mode == InitialListMode::Auto ? "Auto (WatchList if served)"
                                                              : "PaginatedList"));
  WatcherOptions options = quick_options();
  options.initial_list_mode = mode;
  options.page_size = 2;  // several pages when listing
  WatchedState state;
  auto source =
      std::make_shared<CountingSource>(make_client_watch_source(client, resources::config_maps(), ns.name()));
  RunningWatcher running(source, options, state);

  REQUIRE(state.wait_for([](const WatchedState& s) { return s.initial_states_done_ == 1; }, 30s));
  CHECK(converges_to_fresh_list(state, *client, ns.name(), 30s));
  CHECK(state.objects().count("before-4") == 1);
  // The watcher says Watching once its handler has returned from the initial state's InitDone, so
  // right after InitDone it may still say InitialListing (seen once on a loaded machine).
  const auto watching_by = std::chrono::steady_clock::now() + 30s;
  while (running.watcher().state() != WatcherState::Watching &&
         std::chrono::steady_clock::now() < watching_by)
    std::this_thread::sleep_for(10ms);
  CHECK(running.watcher().state() == WatcherState::Watching);
  if (mode == InitialListMode::PaginatedList) CHECK_FALSE(running.watcher().watch_list_supported());
  WARN("WatchList supported by this API server: " << running.watcher().watch_list_supported());

  create_config_map(*client, ns.name(), "live");
  change_config_map(*client, ns.name(), "live", "changed");
  delete_config_map(*client, ns.name(), "before-0");
  REQUIRE(state.wait_for(
      [](const WatchedState& s) { return s.deletes_ == 1 && s.objects_.count("live") == 1; }, 30s));
  // After a paginated LIST the first bookmark comes with the API server's periodic bookmarks (about
  // one a minute, jittered), not at once as the WatchList initial-events-end bookmark does.
  REQUIRE(state.wait_for([](const WatchedState& s) { return s.bookmarks_ >= 1; }, 120s));
  CHECK(converges_to_fresh_list(state, *client, ns.name(), 30s));
  // Through at least one server-side timeout (6 to 8 s) the watcher resumes without relisting: a watch
  // ends and the next one is open.
  const int ended_before = source->ended();
  const auto resumed_by = std::chrono::steady_clock::now() + 60s;
  while (!(source->ended() > ended_before && source->opened() > source->ended()) &&
         std::chrono::steady_clock::now() < resumed_by)
    std::this_thread::sleep_for(10ms);
  REQUIRE(source->ended() > ended_before);
  REQUIRE(source->opened() > source->ended());
  change_config_map(*client, ns.name(), "live", "after-reconnect");
  CHECK(converges_to_fresh_list(state, *client, ns.name(), 30s));
  CHECK(state.initial_states_started_ == 1);
  INFO("history: " << state.history());

  const auto stop_time = running.stop();
  CHECK(stop_time < 1500ms);  // cancellation of a real, open watch
  CHECK(running.result().ok());
}

TEST_CASE("a 410 forced by etcd compaction leads to a relist", "[kube][watch]") {
  if (!testenv::owns_control_plane()) {
    FAIL(
        "needs the control plane this test run starts (unset KUBECONFIG): it compacts etcd and restarts "
        "kube-apiserver");
  }
  testenv::ScopedNamespace ns("watch-gone");
  auto client = std::make_shared<Client>(testing::admin_client());
  create_config_map(*client, ns.name(), "stays");
  create_config_map(*client, ns.name(), "changes");
  create_config_map(*client, ns.name(), "goes");

  std::mutex errors_mutex;
  std::vector<Error> errors;
  auto gate =
      std::make_shared<GatedSource>(make_client_watch_source(client, resources::config_maps(), ns.name()));
  WatchedState state;
  RunningWatcher running(gate, quick_options([&](const Error& error) {
                           std::lock_guard lock(errors_mutex);
                           errors.push_back(error);
                         }),
                         state);
  REQUIRE(state.wait_for([](const WatchedState& s) { return s.initial_states_done_ == 1; }, 30s));
  const std::string watched_version = running.watcher().resource_version();

  // Partition the watcher, then move etcd and the API server's watch cache past its resourceVersion.
  gate->close();
  testenv::restart_apiserver();
  change_config_map(*client, ns.name(), "changes", "while-away");
  delete_config_map(*client, ns.name(), "goes");
  create_config_map(*client, ns.name(), "new");
  const long long compacted_to = testenv::compact_etcd();
  testenv::restart_apiserver();
  INFO("watched at " << watched_version << ", etcd compacted to " << compacted_to);
  gate->open();

  REQUIRE(state.wait_for([](const WatchedState& s) { return s.initial_states_done_ >= 2; }, 60s));
  {
    std::lock_guard lock(errors_mutex);
    const bool saw_gone =
        std::any_of(errors.begin(), errors.end(), [](const Error& error) { return is_gone(error); });
    CHECK(saw_gone);
  }
  CHECK(converges_to_fresh_list(state, *client, ns.name(), 30s));
  CHECK(state.objects().count("goes") == 0);
  CHECK(state.objects().count("new") == 1);
  INFO("history: " << state.history());
}

TEST_CASE("kube-apiserver restarted during a watch: the watch resumes and loses no event", "[kube][watch]") {
  if (!testenv::owns_control_plane()) {
    FAIL(
        "needs the control plane this test run starts (unset KUBECONFIG): it compacts etcd and restarts "
        "kube-apiserver");
  }
  testenv::ScopedNamespace ns("watch-restart");
  auto client = std::make_shared<Client>(testing::admin_client());
  for (const char* name : {"a", "b", "c"}) create_config_map(*client, ns.name(), name);

  auto gate =
      std::make_shared<GatedSource>(make_client_watch_source(client, resources::config_maps(), ns.name()));
  WatchedState state;
  RunningWatcher running(gate, quick_options(), state);
  REQUIRE(state.wait_for([](const WatchedState& s) { return s.initial_states_done_ == 1; }, 30s));

  SECTION("the watcher reconnects by itself after the API server comes back") {
    testenv::stop_apiserver();  // the open watch breaks; reconnects fail with backoff
    std::this_thread::sleep_for(3s);
    testenv::start_apiserver();
    create_config_map(*client, ns.name(), "after-restart");
    delete_config_map(*client, ns.name(), "a");
    CHECK(converges_to_fresh_list(state, *client, ns.name(), 60s));
    CHECK(state.objects().count("a") == 0);
    CHECK(running.watcher().state() == WatcherState::Watching);
  }

  SECTION("events written while the watcher was cut off are all delivered") {
    gate->close();
    testenv::restart_apiserver();  // cuts the open stream; the reconnect waits at the gate
    for (int poll = 0; poll < 100 && gate->waiting_connections() == 0; ++poll)
      std::this_thread::sleep_for(100ms);
    REQUIRE(gate->waiting_connections() == 1);
    change_config_map(*client, ns.name(), "b", "meanwhile");
    delete_config_map(*client, ns.name(), "c");
    create_config_map(*client, ns.name(), "d");
    const auto expected = fresh_list(*client, ns.name());
    gate->open();
    CHECK(converges_to_fresh_list(state, *client, ns.name(), 60s));
    CHECK(state.objects().count("c") == 0);
    CHECK(state.objects().count("d") == 1);
    CHECK(state.objects()["b"] == expected.at("b"));
  }

  // And it keeps following live changes afterwards.
  change_config_map(*client, ns.name(), "b", "live-again");
  CHECK(converges_to_fresh_list(state, *client, ns.name(), 30s));
  INFO("history: " << state.history());
  CHECK(running.stop() < 1500ms);
}
