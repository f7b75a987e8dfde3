#pragma once
// Serves a certificate and key from files and reloads them when they change, as
// controller-runtime's certwatcher does: cert-manager, or a kubelet refreshing a mounted Secret,
// rotates the files and the next TLS connection gets the new pair without a restart.
//
// The files are polled (read and compared, so a Secret volume's atomic symlink swap and an
// in-place rewrite are both seen, whatever the mtime granularity). A new pair that does not
// load (half written, key of another certificate, garbage) is logged once and the previous pair
// keeps being served; the next change is tried again.
//
// It is a Runnable of the manager's groups (runtime/manager/runnable_group.h): start() loads the pair, unless
// load() already has, and fails, with the reason, when it does not load; it is synced once loaded.
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "base/clock.h"
#include "kube/errors.h"
#include "runtime/certificates/tls_certificate.h"
#include "runtime/certificates/tls_context_provider.h"
#include "runtime/manager/periodic_runner.h"
#include "runtime/manager/runnable.h"

namespace myop::runtime {

// The reload decision, without I/O: given a digest of what the files hold now, try to load
// them, or keep what is served. A pair already served, or already refused, is not tried again.
class CertificateReloadTracker {
 public:
  enum class Action { Keep, Load };
  Action seen(const std::string& digest) const;
  void loaded(const std::string& digest);
  void refused(const std::string& digest);

 private:
  std::string loaded_;
  std::string refused_;
};

// Logs a certificate about to be served: its subject, serial, names, notAfter and fingerprint
// (a warning when it has expired). `source`: where it comes from (a file, "self-signed").
void log_served_certificate(const std::string& message, const std::string& source,
                            const CertificateDescription& certificate);

class CertificateWatcher final : public TlsContextProvider, public Runnable {
 public:
  // Polls every `poll_interval` of `clock`. `name`: the runnable's, in logs and failures.
  CertificateWatcher(std::string certificate_path, std::string key_path,
                     std::chrono::milliseconds poll_interval = std::chrono::seconds(5),
                     std::shared_ptr<const base::Clock> clock = base::system_clock(),
                     std::string name = "certificate files");
  ~CertificateWatcher() override;
  CertificateWatcher(const CertificateWatcher&) = delete;
  CertificateWatcher& operator=(const CertificateWatcher&) = delete;

  // Reads and loads the pair once, before serving. The error names the file and what is wrong.
  kube::Result<CertificateDescription> load();
  std::string name() const override { return name_; }
  // Loads the pair unless loaded (and logs it; on_failed hears why it does not load), then polls in
  // the background until stop().
  void start() override;
  void stop() override;
  bool has_synced() const override;
  void on_synced(std::function<void()> callback) override;
  void on_failed(const std::function<void(std::string)>& callback) override;
  // One poll: reads the files and swaps in a changed pair that loads. True when it swapped.
  bool poll();

  std::shared_ptr<boost::asio::ssl::context> tls_context() override;
  CertificateDescription current() const;

 private:
  struct Read {
    CertificatePair pair;
    std::string error;  // non-empty: a file could not be read
  };
  Read read_files() const;

  const std::string certificate_path_;
  const std::string key_path_;
  const std::string name_;
  mutable std::mutex mutex_;
  std::function<void()> synced_;
  std::function<void(std::string)> failed_;
  std::shared_ptr<boost::asio::ssl::context> context_;
  CertificateDescription current_;
  CertificateReloadTracker tracker_;  // used by the polling thread only (and load() before it)
  std::string last_read_error_;
  PeriodicRunner runner_;  // last: stops before what a poll uses goes
};

}  // namespace myop::runtime
