#include "runtime/certificates/cert_watcher.h"

#include <fstream>
#include <sstream>

#include "base/digest.h"
#include "runtime/logging.h"

namespace myop::runtime {
namespace {

std::string pair_digest(const CertificatePair& pair) {
  return base::sha256_hex(pair.certificate_pem) + base::sha256_hex(pair.key_pem);
}

bool read_file(const std::string& path, std::string& content) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return false;
  std::ostringstream text;
  text << file.rdbuf();
  if (file.bad()) return false;
  content = text.str();
  return true;
}

std::string joined(const std::vector<std::string>& names) {
  std::string text;
  for (const auto& name : names) text += (text.empty() ? "" : ",") + name;
  return text;
}

}  // namespace

void log_served_certificate(const std::string& message, const std::string& source,
                            const CertificateDescription& certificate) {
  log(certificate.expired ? spdlog::level::warn : spdlog::level::info, message,
      {{"source", source},
       {"subject", certificate.subject},
       {"serial", certificate.serial},
       {"names", joined(certificate.names)},
       {"notAfter", certificate.not_after},
       {"sha256", certificate.sha256_fingerprint},
       {"expired", certificate.expired ? "true" : "false"}});
}

CertificateReloadTracker::Action CertificateReloadTracker::seen(const std::string& digest) const {
  if (digest == loaded_ || digest == refused_) return Action::Keep;
  return Action::Load;
}

void CertificateReloadTracker::loaded(const std::string& digest) {
  loaded_ = digest;
  refused_.clear();
}

void CertificateReloadTracker::refused(const std::string& digest) { refused_ = digest; }

CertificateWatcher::CertificateWatcher(std::string certificate_path, std::string key_path,
                                       std::chrono::milliseconds poll_interval,
                                       std::shared_ptr<const base::Clock> clock, std::string name)
    : certificate_path_(std::move(certificate_path)),
      key_path_(std::move(key_path)),
      name_(std::move(name)),
      runner_({.name = name_ + " reload",
               .first_delay = poll_interval,
               .period = poll_interval,
               .retry = base::constant_backoff(poll_interval),
               .clock = std::move(clock)},
              [this](const std::stop_token&) {
                poll();
                return StepResult::ok();
              }) {}

CertificateWatcher::~CertificateWatcher() { stop(); }

CertificateWatcher::Read CertificateWatcher::read_files() const {
  Read read;
  if (!read_file(certificate_path_, read.pair.certificate_pem))
    read.error = "cannot read the certificate file " + certificate_path_;
  else if (!read_file(key_path_, read.pair.key_pem))
    read.error = "cannot read the private key file " + key_path_;
  return read;
}

kube::Result<CertificateDescription> CertificateWatcher::load() {
  Read read = read_files();
  if (!read.error.empty()) return kube::make_error(kube::Reason::InvalidConfiguration, read.error);
  auto context = make_server_tls_context(read.pair);
  if (!context) {
    return kube::make_error(kube::Reason::InvalidConfiguration,
                            certificate_path_ + " and " + key_path_ +
                                " are not a usable serving certificate: " + context.error().message);
  }
  auto description = inspect_certificate_pair(read.pair);
  std::lock_guard lock(mutex_);
  context_ = std::move(context).value();
  current_ = description.value();
  tracker_.loaded(pair_digest(read.pair));
  return description;
}

bool CertificateWatcher::poll() {
  Read read = read_files();
  if (!read.error.empty()) {
    // Between the two writes of a rotation a file may be missing for a moment: keep serving.
    if (read.error != last_read_error_)
      log(spdlog::level::err, "Cannot reload the serving certificate; keeping the current one",
          {{"error", read.error}});
    last_read_error_ = read.error;
    return false;
  }
  last_read_error_.clear();
  const std::string digest = pair_digest(read.pair);
  if (tracker_.seen(digest) == CertificateReloadTracker::Action::Keep) return false;
  auto context = make_server_tls_context(read.pair);
  if (!context) {
    tracker_.refused(digest);
    log(spdlog::level::err, "The changed certificate files do not load; keeping the current certificate",
        {{"certificate", certificate_path_}, {"key", key_path_}, {"error", context.error().message}});
    return false;
  }
  const CertificateDescription description = inspect_certificate_pair(read.pair).value();
  {
    std::lock_guard lock(mutex_);
    context_ = std::move(context).value();
    current_ = description;
  }
  tracker_.loaded(digest);
  log(description.expired ? spdlog::level::warn : spdlog::level::info, "Reloaded the serving certificate",
      {{"certificate", certificate_path_},
       {"subject", description.subject},
       {"serial", description.serial},
       {"names", joined(description.names)},
       {"notAfter", description.not_after},
       {"sha256", description.sha256_fingerprint},
       {"expired", description.expired ? "true" : "false"}});
  return true;
}

void CertificateWatcher::start() {
  if (!has_synced()) {
    auto loaded = load();
    if (!loaded) {
      std::function<void(std::string)> failed;
      {
        std::lock_guard lock(mutex_);
        failed = failed_;
      }
      if (failed) failed(loaded.error().message);
      return;
    }
    log_served_certificate("Serving the certificate files, reloaded when they change (" + name_ + ")",
                           certificate_path_, *loaded);
    std::function<void()> synced;
    {
      std::lock_guard lock(mutex_);
      synced = std::move(synced_);
    }
    if (synced) synced();
  }
  runner_.start();
}

void CertificateWatcher::stop() { runner_.stop(); }

bool CertificateWatcher::has_synced() const {
  std::lock_guard lock(mutex_);
  return context_ != nullptr;
}

void CertificateWatcher::on_synced(std::function<void()> callback) {
  {
    std::lock_guard lock(mutex_);
    if (context_ == nullptr) {
      synced_ = std::move(callback);
      return;
    }
  }
  callback();
}

void CertificateWatcher::on_failed(const std::function<void(std::string)>& callback) {
  std::lock_guard lock(mutex_);
  failed_ = callback;
}

std::shared_ptr<boost::asio::ssl::context> CertificateWatcher::tls_context() {
  std::lock_guard lock(mutex_);
  return context_;
}

CertificateDescription CertificateWatcher::current() const {
  std::lock_guard lock(mutex_);
  return current_;
}

}  // namespace myop::runtime
