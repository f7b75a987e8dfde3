// libFuzzer target: the kubeconfig parser (kube/config.h). Any input must give a Kubeconfig or an Error
// with a message, never a crash, a hang or an escaping exception.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "kube/config.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view yaml(reinterpret_cast<const char*>(data), size);
  auto parsed = myop::kube::parse_kubeconfig(yaml, "/fuzz/kubeconfig");
  if (!parsed.ok()) {
    if (parsed.error().message.empty()) __builtin_trap();  // every refusal must say why
    return 0;
  }
  // Resolving reads certificate and token files named by the input; only do it when none is named,
  // so the fuzzer never reads arbitrary paths (or blocks on /dev/zero).
  const auto& kubeconfig = parsed.value();
  for (const auto& [name, cluster] : kubeconfig.clusters) {
    if (!cluster.certificate_authority.empty()) return 0;
  }
  for (const auto& [name, user] : kubeconfig.users) {
    if (!user.client_certificate.empty() || !user.client_key.empty() || !user.token_file.empty()) return 0;
  }
  auto resolved = myop::kube::resolve_kubeconfig(kubeconfig, "");
  if (!resolved.ok() && resolved.error().message.empty()) __builtin_trap();
  return 0;
}
