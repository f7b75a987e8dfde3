// The serving certificate is reloaded when its files change; a changed pair that does not load
// keeps the old one served (and is not retried until the files change again); unreadable files
// at start are a clear error.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>

#include "runtime/certificates/cert_watcher.h"
#include "support/fake_clock.h"

using namespace myop::runtime;

namespace {

class TemporaryFolder {
 public:
  TemporaryFolder() {
    std::string pattern = (std::filesystem::temp_directory_path() / "myop-certs-XXXXXX").string();
    REQUIRE(::mkdtemp(pattern.data()) != nullptr);
    path_ = pattern;
  }
  ~TemporaryFolder() { std::filesystem::remove_all(path_); }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

void write(const std::filesystem::path& path, const std::string& text) {
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  file << text;
}

CertificatePair make_pair() {
  auto pair = generate_self_signed_certificate({"localhost"});
  REQUIRE(pair.ok());
  return *pair;
}

std::string serial_of(const CertificatePair& pair) { return inspect_certificate_pair(pair).value().serial; }

}  // namespace

TEST_CASE("the reload decision: load what is new, keep what is served or was refused",
          "[runtime][tls][cert_watcher]") {
  CertificateReloadTracker tracker;
  using Action = CertificateReloadTracker::Action;
  CHECK(tracker.seen("a") == Action::Load);
  tracker.loaded("a");
  CHECK(tracker.seen("a") == Action::Keep);
  CHECK(tracker.seen("b") == Action::Load);
  tracker.refused("b");
  CHECK(tracker.seen("b") == Action::Keep);  // logged once, not retried every poll
  CHECK(tracker.seen("c") == Action::Load);  // the next change is tried
  tracker.loaded("c");
  CHECK(tracker.seen("b") == Action::Load);  // refused long ago: the files changed back to it
  CHECK(tracker.seen("a") == Action::Load);
}

TEST_CASE("the watcher swaps in a changed pair and keeps the old one when the new one is bad",
          "[runtime][tls][cert_watcher]") {
  TemporaryFolder folder;
  const auto certificate = folder.path() / "tls.crt";
  const auto key = folder.path() / "tls.key";
  const CertificatePair first = make_pair();
  write(certificate, first.certificate_pem);
  write(key, first.key_pem);

  CertificateWatcher watcher(certificate.string(), key.string());
  auto loaded = watcher.load();
  REQUIRE(loaded.ok());
  CHECK(loaded->serial == serial_of(first));
  const auto first_context = watcher.tls_context();
  REQUIRE(first_context);
  CHECK_FALSE(watcher.poll());  // nothing changed
  CHECK(watcher.tls_context() == first_context);

  SECTION("a new valid pair is served from the next poll on") {
    const CertificatePair second = make_pair();
    write(certificate, second.certificate_pem);
    write(key, second.key_pem);
    CHECK(watcher.poll());
    CHECK(watcher.current().serial == serial_of(second));
    CHECK(watcher.tls_context() != first_context);
    CHECK_FALSE(watcher.poll());
  }

  SECTION("half a rotation (new certificate, old key) keeps the old pair until the key follows") {
    const CertificatePair second = make_pair();
    write(certificate, second.certificate_pem);
    CHECK_FALSE(watcher.poll());
    CHECK(watcher.current().serial == serial_of(first));
    CHECK(watcher.tls_context() == first_context);
    write(key, second.key_pem);
    CHECK(watcher.poll());
    CHECK(watcher.current().serial == serial_of(second));
  }

  SECTION("garbage and a missing file keep the old pair") {
    write(certificate, "garbage");
    CHECK_FALSE(watcher.poll());
    std::filesystem::remove(key);
    CHECK_FALSE(watcher.poll());
    CHECK(watcher.current().serial == serial_of(first));
    CHECK(watcher.tls_context() == first_context);
  }

  SECTION("the background poll picks up a change at its next poll on the clock") {
    auto clock = std::make_shared<myop::testing::FakeClock>();
    CertificateWatcher polling(certificate.string(), key.string(), std::chrono::seconds(5), clock);
    REQUIRE(polling.load().ok());
    const auto start = clock->now();
    polling.start();
    const CertificatePair second = make_pair();
    write(key, second.key_pem);
    write(certificate, second.certificate_pem);
    REQUIRE(clock->await_deadline(start + std::chrono::seconds(5)));
    CHECK(polling.current().serial == serial_of(first));  // not before the poll
    clock->advance(std::chrono::seconds(5));
    // The poll after it waits for the next period: by then the first has swapped.
    REQUIRE(clock->await_deadline(start + std::chrono::seconds(10)));
    CHECK(polling.current().serial == serial_of(second));
    polling.stop();
  }
}

TEST_CASE("missing or invalid files at start are an error naming the file", "[runtime][tls][cert_watcher]") {
  TemporaryFolder folder;
  const auto certificate = folder.path() / "tls.crt";
  const auto key = folder.path() / "tls.key";
  auto missing = CertificateWatcher(certificate.string(), key.string()).load();
  REQUIRE_FALSE(missing.ok());
  CHECK_THAT(missing.error().message, Catch::Contains(certificate.string()));

  const CertificatePair pair = make_pair();
  write(certificate, pair.certificate_pem);
  auto no_key = CertificateWatcher(certificate.string(), key.string()).load();
  REQUIRE_FALSE(no_key.ok());
  CHECK_THAT(no_key.error().message, Catch::Contains(key.string()));

  write(key, make_pair().key_pem);
  auto mismatched = CertificateWatcher(certificate.string(), key.string()).load();
  REQUIRE_FALSE(mismatched.ok());
  CHECK_THAT(mismatched.error().message, Catch::Contains("does not belong"));
}

TEST_CASE("as a runnable it loads at start, synced once loaded, and fails with the reason when it cannot",
          "[runtime][tls][cert_watcher]") {
  TemporaryFolder folder;
  const auto certificate = folder.path() / "tls.crt";
  const auto key = folder.path() / "tls.key";
  auto clock = std::make_shared<myop::testing::FakeClock>();
  CertificateWatcher watcher(certificate.string(), key.string(), std::chrono::seconds(5), clock,
                             "metrics certificate files");
  CHECK(watcher.name() == "metrics certificate files");
  std::string failure;
  watcher.on_failed([&](std::string error) { failure = std::move(error); });
  bool synced = false;
  watcher.on_synced([&] { synced = true; });

  watcher.start();  // no files yet
  CHECK_THAT(failure, Catch::Contains(certificate.string()));
  CHECK_FALSE(watcher.has_synced());
  CHECK_FALSE(synced);
  watcher.stop();

  const CertificatePair pair = make_pair();
  write(certificate, pair.certificate_pem);
  write(key, pair.key_pem);
  failure.clear();
  watcher.start();
  CHECK(failure.empty());
  CHECK(watcher.has_synced());
  CHECK(synced);
  CHECK(watcher.tls_context() != nullptr);
  watcher.stop();
}
