// Credentials that change while the operator runs.
//
// Bound service-account tokens expire (one hour by default) and the kubelet rewrites the token file;
// exec plugins hand out short-lived tokens or certificates. A CredentialSource is asked before every
// request and is told when the server answered 401, so a rotated token is picked up without a restart.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "kube/config.h"
#include "kube/errors.h"

namespace myop::kube {

struct Credential {
  std::string bearer_token;            // empty: no Authorization header
  std::string client_certificate_pem;  // empty: no client certificate
  std::string client_key_pem;
  std::optional<std::chrono::system_clock::time_point> expiry;
};

class CredentialSource {
 public:
  virtual ~CredentialSource() = default;
  // The credential to use now. May read a file or run a plugin; thread-safe.
  virtual Result<Credential> current() = 0;
  // The server answered 401 to `rejected`: forget it so the next current() fetches a fresh one.
  virtual void unauthorized(const Credential& rejected) { (void)rejected; }
};

// Token and certificate fixed at start (kubeconfig token / client-certificate-data).
class StaticCredentialSource final : public CredentialSource {
 public:
  explicit StaticCredentialSource(Credential credential) : credential_(std::move(credential)) {}
  Result<Credential> current() override { return credential_; }

 private:
  Credential credential_;
};

// A bearer token read from a file at most `refresh_interval` apart (and at once after a 401). A failed
// or empty read keeps the last good token and is logged; only a first read that fails is an error.
class TokenFileCredentialSource final : public CredentialSource {
 public:
  using Clock = std::chrono::steady_clock;
  explicit TokenFileCredentialSource(std::string path, Credential base = {},
                                     std::chrono::seconds refresh_interval = std::chrono::seconds(60),
                                     std::function<Clock::time_point()> now = Clock::now);
  Result<Credential> current() override;
  void unauthorized(const Credential& rejected) override;

 private:
  const std::string path_;
  const Credential base_;  // client certificate, if the user has one besides the token file
  const std::chrono::seconds refresh_interval_;
  const std::function<Clock::time_point()> now_;
  std::mutex mutex_;
  std::string token_;
  std::optional<Clock::time_point> read_at_;
};

// What an exec plugin printed, parsed from an ExecCredential (client.authentication.k8s.io/v1 or
// v1beta1) of at most kMaximumProcessOutputBytes. `command` names the plugin in messages.
Result<Credential> parse_exec_credential(std::string_view json, const std::string& command,
                                         const std::string& expected_api_version);

// The result of running a program: exit code, stdout, stderr.
struct ProcessOutput {
  int exit_code = -1;
  std::string standard_output;
  std::string standard_error;  // at most kKeptProcessErrorBytes, then a note of how much was dropped
};

// What run_process reads of a program. Its standard output is the answer (an ExecCredential is a few
// KiB: a token, or a certificate and its key): more than kMaximumProcessOutputBytes and the program is
// killed and the run fails. Standard error is only quoted in messages: the first kKeptProcessErrorBytes
// are kept, the rest read and dropped, so a chatty plugin still finishes.
inline constexpr std::size_t kMaximumProcessOutputBytes = std::size_t{1024} * 1024;
inline constexpr std::size_t kKeptProcessErrorBytes = std::size_t{64} * 1024;

// Runs `argv` with extra environment variables; stdin is /dev/null. Errors when it cannot start, prints
// too much on standard output, or runs longer than `timeout`. Replaceable in tests.
using ProcessRunner = std::function<Result<ProcessOutput>(
    const std::vector<std::string>& argv, const std::vector<std::pair<std::string, std::string>>& environment,
    std::chrono::milliseconds timeout)>;
Result<ProcessOutput> run_process(const std::vector<std::string>& argv,
                                  const std::vector<std::pair<std::string, std::string>>& environment,
                                  std::chrono::milliseconds timeout);

// Runs the exec plugin when there is no credential yet, when the last one is within `refresh_margin`
// of its expirationTimestamp, or after a 401. A credential without expiry is kept until a 401.
class ExecCredentialSource final : public CredentialSource {
 public:
  ExecCredentialSource(ExecConfig exec, std::string server, std::string ca_pem,
                       ProcessRunner runner = run_process,
                       std::chrono::seconds refresh_margin = std::chrono::seconds(10));
  Result<Credential> current() override;
  void unauthorized(const Credential& rejected) override;

 private:
  Result<Credential> run_plugin();

  const ExecConfig exec_;
  const std::string server_;
  const std::string ca_pem_;
  const ProcessRunner runner_;
  const std::chrono::seconds refresh_margin_;
  std::mutex mutex_;
  std::optional<Credential> cached_;
};

// The right source for a resolved configuration: exec, token file, or static token/certificate.
std::shared_ptr<CredentialSource> make_credential_source(const ClientConfig& config);

}  // namespace myop::kube
