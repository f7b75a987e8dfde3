#include "kube/credentials.h"

#include <fcntl.h>
#include <poll.h>
#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>
#include <signal.h>  // NOLINT(modernize-deprecated-headers): kill() is POSIX, not <csignal>
#include <spawn.h>
#include <spdlog/spdlog.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <fstream>
#include <sstream>
#include <system_error>

#include "base/text.h"
#include "base/time_format.h"
#include "kube/json_parser.h"

namespace myop::kube {
namespace {

std::string encode_base64(std::string_view data) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string encoded;
  std::size_t i = 0;
  for (; i + 2 < data.size(); i += 3) {
    const unsigned int n = (static_cast<unsigned char>(data[i]) << 16) |
                           (static_cast<unsigned char>(data[i + 1]) << 8) |
                           static_cast<unsigned char>(data[i + 2]);
    encoded += kAlphabet[(n >> 18) & 63];
    encoded += kAlphabet[(n >> 12) & 63];
    encoded += kAlphabet[(n >> 6) & 63];
    encoded += kAlphabet[n & 63];
  }
  if (i < data.size()) {
    unsigned int n = static_cast<unsigned char>(data[i]) << 16;
    if (i + 1 < data.size()) n |= static_cast<unsigned char>(data[i + 1]) << 8;
    encoded += kAlphabet[(n >> 18) & 63];
    encoded += kAlphabet[(n >> 12) & 63];
    encoded += (i + 1 < data.size()) ? kAlphabet[(n >> 6) & 63] : '=';
    encoded += '=';
  }
  return encoded;
}

std::string string_member(const rapidjson::Value& object, const char* name) {
  if (!object.IsObject()) return {};
  auto member = object.FindMember(name);
  if (member == object.MemberEnd() || !member->value.IsString()) return {};
  return std::string(member->value.GetString(), member->value.GetStringLength());
}

Error plugin_error(const std::string& command, const std::string& problem) {
  return make_error(Reason::Unauthorized, "exec credential plugin " + command + ": " + problem);
}

}  // namespace

// ---- token file ------------------------------------------------------------------------------------

TokenFileCredentialSource::TokenFileCredentialSource(std::string path, Credential base,
                                                     std::chrono::seconds refresh_interval,
                                                     std::function<Clock::time_point()> now)
    : path_(std::move(path)),
      base_(std::move(base)),
      refresh_interval_(refresh_interval),
      now_(std::move(now)) {}

Result<Credential> TokenFileCredentialSource::current() {
  std::lock_guard lock(mutex_);
  const auto now = now_();
  if (!read_at_ || now - *read_at_ >= refresh_interval_) {
    std::ifstream in(path_, std::ios::binary);
    std::ostringstream content;
    const int open_error = in ? 0 : errno;
    if (in) content << in.rdbuf();
    std::string token = in ? std::string(base::trim(content.str())) : std::string();
    if (!token.empty()) {
      if (!token_.empty() && token != token_)
        spdlog::info("bearer token file {} changed; using the new token", path_);
      token_ = std::move(token);
    } else if (token_.empty()) {
      return make_error(Reason::Unauthorized,
                        "the bearer token file " + path_ +
                            (in ? std::string(" is empty")
                                : " cannot be read: " + std::generic_category().message(open_error)));
    } else {
      // The kubelet replaces the file atomically, but a mount hiccup must not take the operator down.
      spdlog::warn("bearer token file {} could not be read or is empty; keeping the last good token", path_);
    }
    read_at_ = now;
  }
  Credential credential = base_;
  credential.bearer_token = token_;
  return credential;
}

void TokenFileCredentialSource::unauthorized(const Credential& rejected) {
  std::lock_guard lock(mutex_);
  // Re-read at the next request, but only once per rejected token so a storm of 401s reads once.
  if (rejected.bearer_token == token_) read_at_.reset();
}

// ---- exec plugin -----------------------------------------------------------------------------------

Result<Credential> parse_exec_credential(std::string_view json, const std::string& command,
                                         const std::string& expected_api_version) {
  auto parsed = parse_json_document(json, JsonLimits{kMaximumProcessOutputBytes});
  if (!parsed)
    return plugin_error(command,
                        "printed something that is not a JSON ExecCredential: " + parsed.error().message);
  const rapidjson::Document& document = parsed.value();
  if (!document.IsObject()) return plugin_error(command, "printed JSON that is not an ExecCredential object");
  if (string_member(document, "kind") != "ExecCredential")
    return plugin_error(command,
                        "printed kind \"" + string_member(document, "kind") + "\", expected ExecCredential");
  const std::string api_version = string_member(document, "apiVersion");
  if (api_version != expected_api_version)
    return plugin_error(command, "printed apiVersion \"" + api_version + "\" but the kubeconfig asks for \"" +
                                     expected_api_version + "\"");
  auto status = document.FindMember("status");
  if (status == document.MemberEnd() || !status->value.IsObject())
    return plugin_error(command, "printed an ExecCredential without status");
  Credential credential;
  credential.bearer_token = string_member(status->value, "token");
  credential.client_certificate_pem = string_member(status->value, "clientCertificateData");
  credential.client_key_pem = string_member(status->value, "clientKeyData");
  if (credential.client_certificate_pem.empty() != credential.client_key_pem.empty())
    return plugin_error(command,
                        "printed clientCertificateData without clientKeyData or the other way round");
  if (credential.bearer_token.empty() && credential.client_certificate_pem.empty())
    return plugin_error(command, "printed neither status.token nor status.clientCertificateData");
  const std::string expiration = string_member(status->value, "expirationTimestamp");
  if (!expiration.empty()) {
    credential.expiry = base::parse_rfc3339(expiration);
    if (!credential.expiry)
      return plugin_error(command,
                          "printed status.expirationTimestamp \"" + expiration + "\" that is not RFC 3339");
  }
  return credential;
}

Result<ProcessOutput> run_process(const std::vector<std::string>& argv,
                                  const std::vector<std::pair<std::string, std::string>>& environment,
                                  std::chrono::milliseconds timeout) {
  if (argv.empty()) return make_error(Reason::InvalidConfiguration, "no command to run");
  std::array<int, 2> out_pipe{-1, -1};
  std::array<int, 2> err_pipe{-1, -1};
  if (pipe2(out_pipe.data(), O_CLOEXEC) != 0 || pipe2(err_pipe.data(), O_CLOEXEC) != 0)
    return make_error(Reason::Unknown, "cannot create a pipe: " + std::generic_category().message(errno));

  // Environment: ours, with the plugin's variables replacing any of the same name.
  std::vector<std::string> environment_strings;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    std::string_view text(*entry);
    const auto name = text.substr(0, text.find('='));
    const bool overridden = std::any_of(environment.begin(), environment.end(),
                                        [&](const auto& variable) { return variable.first == name; });
    if (!overridden) environment_strings.emplace_back(text);
  }
  for (const auto& [name, value] : environment) {
    std::string& text = environment_strings.emplace_back(name);
    text += '=';
    text += value;
  }
  std::vector<char*> environment_pointers;
  environment_pointers.reserve(environment_strings.size() + 1);
  for (auto& text : environment_strings) environment_pointers.push_back(text.data());
  environment_pointers.push_back(nullptr);
  std::vector<std::string> arguments(argv);
  std::vector<char*> argument_pointers;
  argument_pointers.reserve(arguments.size() + 1);
  for (auto& text : arguments) argument_pointers.push_back(text.data());
  argument_pointers.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], STDERR_FILENO);
  pid_t pid = -1;
  const int spawned = posix_spawnp(&pid, arguments[0].c_str(), &actions, nullptr, argument_pointers.data(),
                                   environment_pointers.data());
  posix_spawn_file_actions_destroy(&actions);
  close(out_pipe[1]);
  close(err_pipe[1]);
  if (spawned != 0) {
    close(out_pipe[0]);
    close(err_pipe[0]);
    return make_error(Reason::InvalidConfiguration,
                      "cannot run " + arguments[0] + ": " + std::generic_category().message(spawned));
  }

  ProcessOutput output;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::array<pollfd, 2> descriptors{{{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}}};
  bool timed_out = false;
  bool too_much_output = false;
  std::size_t dropped_error_bytes = 0;
  int open_descriptors = 2;
  std::array<char, 4096> buffer{};
  while (open_descriptors > 0 && !too_much_output) {
    const auto remaining =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now())
            .count();
    if (remaining <= 0) {
      timed_out = true;
      break;
    }
    const int ready =
        poll(descriptors.data(), descriptors.size(), static_cast<int>(std::min<long long>(remaining, 1000)));
    if (ready < 0 && errno != EINTR) break;
    for (std::size_t i = 0; i < descriptors.size(); ++i) {
      if (descriptors[i].fd < 0 || descriptors[i].revents == 0) continue;
      const ssize_t count = read(descriptors[i].fd, buffer.data(), buffer.size());
      if (count > 0) {
        const std::string_view piece(buffer.data(), static_cast<std::size_t>(count));
        if (i == 0) {
          too_much_output = output.standard_output.size() + piece.size() > kMaximumProcessOutputBytes;
          if (too_much_output) break;
          output.standard_output.append(piece);
        } else {
          const std::size_t kept =
              std::min(piece.size(), kKeptProcessErrorBytes - output.standard_error.size());
          output.standard_error.append(piece.substr(0, kept));
          dropped_error_bytes += piece.size() - kept;
        }
      } else if (count == 0 || (errno != EINTR && errno != EAGAIN)) {
        close(descriptors[i].fd);
        descriptors[i].fd = -1;
        --open_descriptors;
      }
    }
  }
  for (auto& descriptor : descriptors)
    if (descriptor.fd >= 0) close(descriptor.fd);
  if (timed_out || too_much_output) kill(pid, SIGKILL);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out)
    return make_error(Reason::Timeout,
                      arguments[0] + " did not finish within " + std::to_string(timeout.count()) + " ms");
  if (too_much_output)
    return make_error(Reason::Unknown, arguments[0] + " printed more than " +
                                           std::to_string(kMaximumProcessOutputBytes) +
                                           " bytes on standard output and was killed");
  if (dropped_error_bytes > 0)
    output.standard_error +=
        "\n[" + std::to_string(dropped_error_bytes) + " more bytes of standard error dropped]";
  output.exit_code =
      WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  return output;
}

ExecCredentialSource::ExecCredentialSource(ExecConfig exec, std::string server, std::string ca_pem,
                                           ProcessRunner runner, std::chrono::seconds refresh_margin)
    : exec_(std::move(exec)),
      server_(std::move(server)),
      ca_pem_(std::move(ca_pem)),
      runner_(std::move(runner)),
      refresh_margin_(refresh_margin) {}

Result<Credential> ExecCredentialSource::current() {
  std::lock_guard lock(mutex_);
  if (cached_) {
    if (!cached_->expiry || *cached_->expiry - refresh_margin_ > std::chrono::system_clock::now())
      return *cached_;
  }
  auto fresh = run_plugin();
  if (!fresh) return fresh;
  cached_ = fresh.value();
  return fresh;
}

void ExecCredentialSource::unauthorized(const Credential& rejected) {
  std::lock_guard lock(mutex_);
  if (cached_ && cached_->bearer_token == rejected.bearer_token &&
      cached_->client_certificate_pem == rejected.client_certificate_pem)
    cached_.reset();
}

Result<Credential> ExecCredentialSource::run_plugin() {
  // KUBERNETES_EXEC_INFO tells the plugin the API version we speak and, when asked for, the cluster.
  rapidjson::StringBuffer info;
  rapidjson::Writer<rapidjson::StringBuffer> writer(info);
  writer.StartObject();
  writer.Key("apiVersion");
  writer.String(exec_.api_version.c_str());
  writer.Key("kind");
  writer.String("ExecCredential");
  writer.Key("spec");
  writer.StartObject();
  writer.Key("interactive");
  writer.Bool(false);
  if (exec_.provide_cluster_info) {
    writer.Key("cluster");
    writer.StartObject();
    writer.Key("server");
    writer.String(server_.c_str());
    if (!ca_pem_.empty()) {
      writer.Key("certificate-authority-data");
      writer.String(encode_base64(ca_pem_).c_str());
    }
    writer.EndObject();
  }
  writer.EndObject();
  writer.EndObject();

  std::vector<std::string> argv{exec_.command};
  argv.insert(argv.end(), exec_.args.begin(), exec_.args.end());
  auto environment = exec_.env;
  environment.emplace_back("KUBERNETES_EXEC_INFO", info.GetString());

  auto output = runner_(argv, environment, std::chrono::seconds(60));
  if (!output) {
    std::string problem = output.error().message;
    if (!exec_.install_hint.empty()) problem += "; " + exec_.install_hint;
    return plugin_error(exec_.command, problem);
  }
  if (output->exit_code != 0) {
    std::string problem = "exited with code " + std::to_string(output->exit_code);
    if (std::string text(base::trim(output->standard_error)); !text.empty())
      problem += ": " + text.substr(0, 512);
    return plugin_error(exec_.command, problem);
  }
  return parse_exec_credential(output->standard_output, exec_.command, exec_.api_version);
}

std::shared_ptr<CredentialSource> make_credential_source(const ClientConfig& config) {
  if (config.exec) return std::make_shared<ExecCredentialSource>(*config.exec, config.server, config.ca_pem);
  Credential base;
  base.client_certificate_pem = config.client_certificate_pem;
  base.client_key_pem = config.client_key_pem;
  if (!config.token_file.empty()) return std::make_shared<TokenFileCredentialSource>(config.token_file, base);
  base.bearer_token = config.token;
  return std::make_shared<StaticCredentialSource>(base);
}

}  // namespace myop::kube
