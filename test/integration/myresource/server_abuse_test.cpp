// The operator's servers under abuse (issue 33), on the [conversion] control plane: the MyResource CRD
// converts through the webhook of the operator under test, which also runs its controller, probes and
// metrics. While clients from other loopback addresses (other "pods") stream large bodies at each
// server, claim bodies larger than the limits, and slow-drip requests on many connections, the test
// witnesses from outside what a cluster relies on:
//   - every read of v1alpha1 MyResources through the API server (a conversion by this operator)
//     succeeds,
//   - /readyz, polled throughout, answers 200 every time,
//   - the operator's resident memory stays under kRssBound (docs/security.md, "Servers under abuse"),
//   - the abuse happened: the bytes were sent, and the operator's metrics count each limit it met.
#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "myresource/operator_process.h"
#include "support/testenv.h"

using namespace myop;
using namespace myop::testing;
using namespace std::chrono_literals;

namespace {

// The operator's resident set may not pass this during the abuse. Its servers' limits bound what
// clients make it hold (about 32 MiB of webhook request bodies and four conversions of at most
// 8 MiB each at once, plus at most 384 connections); the rest is the process at rest. The chart's
// memory limit is 512Mi.
constexpr long kRssBoundKiB = 320 * 1024;
constexpr auto kAbuse = 30s;

// Where the abusers connect from: one address per "pod", none the API server's or the test's own
// (127.0.0.1), so each meets the per-client connection limit on its own.
constexpr const char* kDripper = "127.0.0.2";
constexpr const char* kStreamer = "127.0.0.3";

std::string jsonpath(const std::string& what, const std::string& path) {
  const auto result = testenv::kubectl("get " + what + " -o jsonpath='" + path + "'");
  return result.ok() ? result.output : "(error) " + result.output;
}

// v1beta1 stored, v1alpha1 served, conversion by the webhook at `url` (the shipped CRD's versions).
void convert_through_webhook(const std::string& url) {
  std::istringstream names(jsonpath("crd myresources.myorg.io", "{.spec.versions[*].name}"));
  std::string patch;
  int index = 0;
  for (std::string name; names >> name; ++index) {
    const std::string path = "/spec/versions/" + std::to_string(index);
    patch += R"({"op":"replace","path":")" + path + R"(/served","value":true},)";
    patch += R"({"op":"replace","path":")" + path + R"(/storage","value":)" +
             (name == "v1beta1" ? "true" : "false") + "},";
  }
  REQUIRE(index == 2);
  testenv::kubectl_or_fail(R"(patch crd myresources.myorg.io --type=json -p '[)" + patch +
                           R"({"op":"add","path":"/spec/conversion","value":{"strategy":"Webhook","webhook":)"
                           R"({"conversionReviewVersions":["v1"],"clientConfig":{"url":")" +
                           url + R"("}}}}]')");
  testenv::kubectl_or_fail("wait --for=condition=Established crd/myresources.myorg.io --timeout=60s");
}

long status_kib(pid_t pid, const std::string& field) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind(field + ":", 0) == 0) return std::strtol(line.c_str() + field.size() + 1, nullptr, 10);
  }
  return -1;
}

// A client connection from `source` to 127.0.0.1:`port`, plain or TLS (any certificate), every wait
// bounded by 15 s so that nothing here can hang the test.
class Client {
 public:
  Client(std::uint16_t port, const char* source, SSL_CTX* tls) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    timeval timeout{15, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
    ::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
    sockaddr_in local{};
    local.sin_family = AF_INET;
    ::inet_pton(AF_INET, source, &local.sin_addr);
    sockaddr_in remote{};
    remote.sin_family = AF_INET;
    remote.sin_port = htons(port);
    remote.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&local), sizeof local) != 0 ||
        ::connect(fd_, reinterpret_cast<sockaddr*>(&remote), sizeof remote) != 0)
      return;
    if (tls != nullptr) {
      ssl_ = SSL_new(tls);
      SSL_set_fd(ssl_, fd_);
      if (SSL_connect(ssl_) != 1) return;
    }
    ok_ = true;
  }
  ~Client() {
    if (ssl_ != nullptr) SSL_free(ssl_);
    if (fd_ >= 0) ::close(fd_);
    ERR_clear_error();
  }
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  bool ok() const { return ok_; }
  int fd() const { return fd_; }

  // Sends it all; false once the server has closed or reset the connection.
  bool send(std::string_view bytes) {
    while (ok_ && !bytes.empty()) {
      const long sent = ssl_ != nullptr ? SSL_write(ssl_, bytes.data(), static_cast<int>(bytes.size()))
                                        : ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
      if (sent <= 0)
        ok_ = false;
      else
        bytes.remove_prefix(static_cast<std::size_t>(sent));
    }
    return ok_;
  }

  // The status of the response, reading it whole (Content-Length framed); 0 when none came.
  int read_status() {
    std::string read;
    char buffer[65536];
    std::size_t header_end = std::string::npos;
    std::size_t length = 0;
    while (true) {
      if (header_end == std::string::npos && (header_end = read.find("\r\n\r\n")) != std::string::npos) {
        const auto at = read.find("Content-Length: ");
        if (at != std::string::npos && at < header_end)
          length = std::strtoul(read.c_str() + at + 16, nullptr, 10);
      }
      if (header_end != std::string::npos && read.size() >= header_end + 4 + length) break;
      const long got =
          ssl_ != nullptr ? SSL_read(ssl_, buffer, sizeof buffer) : ::recv(fd_, buffer, sizeof buffer, 0);
      if (got <= 0) break;
      read.append(buffer, static_cast<std::size_t>(got));
    }
    return read.size() > 12 && read.rfind("HTTP/1.1 ", 0) == 0 ? std::atoi(read.c_str() + 9) : 0;
  }

 private:
  int fd_ = -1;
  SSL* ssl_ = nullptr;
  bool ok_ = false;
};

// A valid ConversionReview of v1alpha1 MyResources just under `bytes`: the webhook converts every
// object (real work), as for an Argo CD sync of a large old tree.
std::string large_review(std::size_t bytes) {
  const std::string padding(1500, 'p');
  std::string objects;
  for (int i = 0;; ++i) {
    std::string object = R"({"apiVersion":"myorg.io/v1alpha1","kind":"MyResource","metadata":{"name":"app-)" +
                         std::to_string(i) + R"(","namespace":"abuse","uid":"u-)" + std::to_string(i) +
                         R"(","annotations":{"myorg.io/canary":"true","myorg.io/targetVersion":"1.27.2",)"
                         R"("myorg.io/features":"orphanSweep=false","note":")" +
                         padding + R"("}},"spec":{"image":"nginx:1.27.1","replicas":1}})";
    if (objects.size() + object.size() + 300 > bytes) break;
    objects += (objects.empty() ? "" : ",") + object;
  }
  return R"({"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{"uid":"abuse",)"
         R"("desiredAPIVersion":"myorg.io/v1beta1","objects":[)" +
         objects + "]}}";
}

// The first bytes a TLS client sends (its ClientHello), to drip at the webhook: the server waits for
// the rest of the handshake.
std::string client_hello(SSL_CTX* tls) {
  SSL* ssl = SSL_new(tls);
  BIO* in = BIO_new(BIO_s_mem());
  BIO* out = BIO_new(BIO_s_mem());
  SSL_set_bio(ssl, in, out);
  SSL_connect(ssl);  // wants the server's answer; the hello is written
  char* data = nullptr;
  const long length = BIO_get_mem_data(out, &data);
  std::string hello(data, static_cast<std::size_t>(std::max(0L, length)));
  SSL_free(ssl);
  ERR_clear_error();
  return hello;
}

std::string post_header(const std::string& method, const std::string& path, std::size_t length) {
  return method + " " + path +
         " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: " +
         std::to_string(length) + "\r\nConnection: close\r\n\r\n";
}

// What the abusers sent and were answered, by server.
struct Tally {
  std::mutex mutex;
  std::map<std::string, std::map<int, int>> statuses;  // server -> HTTP status (0: none) -> count
  std::map<std::string, std::size_t> bytes;
  std::map<std::string, int> drips_cut;  // drip connections the server closed
  void answered(const std::string& server, int status, std::size_t sent) {
    std::lock_guard lock(mutex);
    ++statuses[server][status];
    bytes[server] += sent;
  }
  std::string describe() {
    std::lock_guard lock(mutex);
    std::ostringstream text;
    for (const auto& [server, by_status] : statuses) {
      text << server << ": " << bytes[server] / (1024 * 1024) << " MiB sent, answers";
      for (const auto& [status, count] : by_status) text << " " << status << "x" << count;
      text << ", drips cut " << drips_cut[server] << "\n";
    }
    return text.str();
  }
};

// Streams `total` bytes of a body announced as `length` (a body the server may refuse from its
// header: then the stream ends when the server closes), and reads the answer.
void stream_request(const std::string& server, std::uint16_t port, SSL_CTX* tls, const std::string& head,
                    std::string_view body, std::size_t total, Tally& tally) {
  Client client(port, kStreamer, tls);
  if (!client.ok()) return tally.answered(server, -1, 0);  // refused at connect (per-client limit)
  std::size_t sent = head.size();
  client.send(head);
  const std::string filler(64 * 1024, 'x');
  while (sent < head.size() + total && client.ok()) {
    const std::size_t offset = sent - head.size();
    std::string_view chunk = offset < body.size() ? body.substr(offset, 64 * 1024) : std::string_view(filler);
    chunk = chunk.substr(0, std::min(chunk.size(), total - offset));
    if (client.send(chunk)) sent += chunk.size();
  }
  tally.answered(server, client.read_status(), sent);
}

}  // namespace

TEST_CASE(
    "servers under abuse: large bodies, oversized claims and slow drips on every server: conversions, "
    "readiness and memory hold",
    "[myresource][operator][conversion][abuse]") {
  if (!testenv::owns_control_plane()) FAIL("needs a control plane of its own: it changes the MyResource CRD");
  testenv::ScopedNamespace ns("abuse");
  const unsigned short webhook_port = free_port();
  OperatorOptions options;
  options.user = "myop-abuse-" + ns.name();
  options.namespaces = {ns.name()};
  options.pod_namespace = ns.name();
  options.extra_cluster_role_files = {"webhook_role.yaml"};
  options.extra_role_files = {"webhook_secret_role.yaml"};
  options.extra_args = {"--webhook-bind-address", "127.0.0.1:" + std::to_string(webhook_port),
                        "--webhook-cert-names", "127.0.0.1"};
  OperatorProcess operator_process(options);  // installs the shipped CRD
  convert_through_webhook("https://127.0.0.1:" + std::to_string(webhook_port) + "/convert");
  operator_process.start();
  INFO("operator log:\n" << operator_process.log_tail(40));
  // The operator's CA in the CRD (not the one the CRD was installed with).
  REQUIRE(eventually(
      [&] {
        const std::string ca =
            jsonpath("secret my-operator-webhook-cert -n " + ns.name(), "{.data.ca\\.crt}");
        return !ca.empty() &&
               ca == jsonpath("crd myresources.myorg.io", "{.spec.conversion.webhook.clientConfig.caBundle}");
      },
      30s));
  constexpr int kObjects = 20;
  const auto applied = testenv::kubectl_apply(v1alpha1_fleet_manifest(ns.name(), kObjects));
  INFO(applied.output);
  REQUIRE(applied.ok());
  const std::string read_alpha =
      "get myresources.v1alpha1.myorg.io -n " + ns.name() + " -o name --request-timeout=30s";
  REQUIRE(eventually([&] { return testenv::kubectl(read_alpha).ok(); }, 30s));

  // TLS writes to a connection the server closed raise SIGPIPE (OpenSSL writes with write(2)).
  struct IgnoreSigpipe {
    IgnoreSigpipe() : previous(std::signal(SIGPIPE, SIG_IGN)) {}
    ~IgnoreSigpipe() { std::signal(SIGPIPE, previous); }
    void (*previous)(int);
  } ignore_sigpipe;
  const pid_t pid = operator_process.pid();
  const long rss_before = status_kib(pid, "VmRSS");
  SSL_CTX* tls = SSL_CTX_new(TLS_client_method());
  SSL_CTX_set_verify(tls, SSL_VERIFY_NONE, nullptr);
  const std::string review = large_review(8 * 1024 * 1024 - 64 * 1024);
  const std::map<std::string, std::uint16_t> ports = {{"webhook", webhook_port},
                                                      {"probes", operator_process.probe_port()},
                                                      {"metrics", operator_process.metrics_port()}};

  Tally tally;
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  // Large valid reviews and 64 MiB claims at the webhook, six streams at once: more than its budget
  // of buffered bodies holds.
  for (int t = 0; t < 6; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; !stop; ++i) {
        if ((i + t) % 4 == 3) {
          stream_request("webhook", webhook_port, tls, post_header("POST", "/convert", 64 << 20), {},
                         16 << 20, tally);
        } else {
          stream_request("webhook", webhook_port, tls, post_header("POST", "/convert", review.size()), review,
                         review.size(), tally);
        }
      }
    });
  }
  // GETs with bodies at the probes and /metrics: a 1 MiB one sent whole, a 64 MiB claim streamed.
  for (const std::string server : {"probes", "metrics"}) {
    threads.emplace_back([&, server] {
      const std::string path = server == "probes" ? "/readyz" : "/metrics";
      for (int i = 0; !stop; ++i) {
        const std::size_t length = i % 2 == 0 ? 1 << 20 : 64 << 20;
        stream_request(server, ports.at(server), nullptr, post_header("GET", path, length), {},
                       std::min<std::size_t>(length, 16 << 20), tally);
      }
    });
  }
  // Slow drips from another address: 40 connections to each plain server and 150 to the webhook
  // (beyond the per-client limits of 16 and 128), each sending a byte a second of a request (of a TLS
  // handshake at the webhook); a connection the server closes is opened again.
  const std::string hello = client_hello(tls);
  REQUIRE(hello.size() > 100);
  threads.emplace_back([&] {
    const std::string request = "GET /readyz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Drip: " + std::string(200, 'd');
    struct Drip {
      std::string server;
      std::unique_ptr<Client> client;
      std::size_t sent = 0;
    };
    std::vector<Drip> drips;
    for (const auto& [server, count] :
         std::map<std::string, int>{{"probes", 40}, {"metrics", 40}, {"webhook", 150}})
      for (int i = 0; i < count; ++i) drips.push_back({server, nullptr, 0});
    while (!stop) {
      for (auto& drip : drips) {
        char probe = 0;
        const bool closed = drip.client && (!drip.client->ok() || ::recv(drip.client->fd(), &probe, 1,
                                                                         MSG_DONTWAIT | MSG_PEEK) == 0);
        if (closed) {
          std::lock_guard lock(tally.mutex);
          ++tally.drips_cut[drip.server];
        }
        if (!drip.client || closed) {
          drip.client = std::make_unique<Client>(ports.at(drip.server), kDripper, nullptr);
          drip.sent = 0;
        }
        const std::string& bytes = drip.server == "webhook" ? hello : request;
        drip.client->send(std::string_view(bytes).substr(std::min(drip.sent, bytes.size() - 1), 1));
        ++drip.sent;
      }
      std::this_thread::sleep_for(1s);
    }
  });

  // Meanwhile: reads that need the conversion, readiness, and the operator's memory.
  int reads = 0;
  std::vector<std::string> failed_reads;
  int polls = 0;
  std::vector<std::string> unready;
  long rss_peak = rss_before;
  std::thread reader([&] {
    while (!stop) {
      const auto result = testenv::kubectl(read_alpha);
      std::size_t names = 0;
      for (std::size_t at = result.output.find("myresource"); at != std::string::npos;
           at = result.output.find("myresource", at + 1))
        ++names;
      ++reads;
      if (!result.ok() || names != kObjects) failed_reads.push_back(result.output);
    }
  });
  std::thread prober([&] {
    while (!stop) {
      const auto probe = operator_process.readyz();
      ++polls;
      if (probe.status != 200) unready.push_back(std::to_string(probe.status) + " " + probe.body);
      rss_peak = std::max(rss_peak, status_kib(pid, "VmRSS"));
      std::this_thread::sleep_for(200ms);
    }
  });
  std::this_thread::sleep_for(kAbuse);
  stop = true;
  for (auto& thread : threads) thread.join();
  reader.join();
  prober.join();
  SSL_CTX_free(tls);

  const long high_water = status_kib(pid, "VmHWM");
  const std::string metrics = operator_process.metrics();
  const auto rejected = [&](const std::string& server, const std::string& reason) {
    return metric_sum(metrics, "myoperator_http_requests_rejected_total",
                      {"server=\"" + server + "\"", "reason=\"" + reason + "\""});
  };
  INFO(tally.describe() << "reads " << reads << ", /readyz polls " << polls << ", RSS before "
                        << rss_before / 1024 << " MiB, sampled peak " << rss_peak / 1024 << " MiB, VmHWM "
                        << high_water / 1024 << " MiB\nrejections:\n"
                        << [&] {
                             std::string lines;
                             std::istringstream text(metrics);
                             for (std::string line; std::getline(text, line);)
                               if (line.rfind("myoperator_http_requests_rejected_total{", 0) == 0)
                                 lines += line + "\n";
                             return lines;
                           }());
  CHECK(operator_process.running());
  CHECK(reads >= 5);
  for (const auto& failure : failed_reads) FAIL_CHECK("a read of v1alpha1 failed: " << failure);
  CHECK(polls >= 20);
  for (const auto& answer : unready) FAIL_CHECK("/readyz answered " << answer);
  CHECK(high_water < kRssBoundKiB);
  CHECK(rss_peak < kRssBoundKiB);

  // The abuse was real: the bytes went out, and every limit met it.
  {
    std::lock_guard lock(tally.mutex);
    CHECK(tally.bytes["webhook"] > 200U << 20);
    CHECK(tally.statuses["webhook"][200] >= 4);  // large reviews converted
    CHECK(tally.statuses["webhook"][503] > 0);   // and beyond the budget, refused unread
    CHECK(tally.statuses["probes"][413] >= 4);
    CHECK(tally.statuses["metrics"][413] >= 4);
    CHECK(tally.drips_cut["webhook"] > 0);
    CHECK(tally.drips_cut["probes"] > 0);
  }
  for (const std::string server : {"probes", "metrics", "webhook"}) {
    INFO(server);
    CHECK(rejected(server, "client_connection_limit") > 0);
    CHECK(rejected(server, "deadline") > 0);
    CHECK(rejected(server, "body_too_large") > 0);
  }
  CHECK(rejected("webhook", "buffer_budget") > 0);
  WARN("servers under abuse for " << std::chrono::duration_cast<std::chrono::seconds>(kAbuse).count()
                                  << " s:\n"
                                  << tally.describe() << reads << " reads of " << kObjects
                                  << " v1alpha1 objects, all converted; " << polls
                                  << " /readyz polls, all 200; operator RSS " << rss_before / 1024
                                  << " MiB before, sampled peak " << rss_peak / 1024 << " MiB, VmHWM "
                                  << high_water / 1024 << " MiB (bound " << kRssBoundKiB / 1024 << " MiB)");
}
