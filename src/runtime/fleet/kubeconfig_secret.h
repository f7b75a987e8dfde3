// Member clusters described by kubeconfig Secrets, compatible with multicluster-runtime's kubeconfig
// provider: a Secret in the operator's namespace labelled sigs.k8s.io/multicluster-runtime-kubeconfig
// holds a member's kubeconfig under the key `kubeconfig`, and the Secret's name is the cluster's
// name. A fleet's existing Secrets work unchanged.
//
// A Secret's kubeconfig must be self-contained: the member's CA, client certificate and key as
// *-data fields or a bearer token. Anyone who may write Secrets in the operator's namespace chooses
// these bytes, so file paths (certificate-authority, client-certificate, client-key, tokenFile) and
// exec credential plugins are refused: they would make the operator read its own files or run a
// command of the Secret author's choosing. Each refusal names the Secret and the field.
#pragma once

#include <string>
#include <string_view>

#include "kube/config.h"
#include "kube/errors.h"
#include "kube/object.h"

namespace myop::runtime::fleet {

inline constexpr std::string_view kKubeconfigSecretLabel = "sigs.k8s.io/multicluster-runtime-kubeconfig";
inline constexpr std::string_view kKubeconfigSecretKey = "kubeconfig";

// One member cluster, as its Secret describes it.
struct MemberSource {
  std::string name;    // the Secret's name: the cluster's name in logs, metrics and events
  std::string digest;  // kubeconfig_digest(): a rotation changes it
  kube::ClientConfig config;
};

// Reads a kubeconfig Secret as the API server returns it (data base64-encoded). Errors have reason
// InvalidConfiguration and start with "Secret <namespace>/<name>".
kube::Result<MemberSource> read_kubeconfig_secret(const kube::ObjectView& secret);

// SHA-256 (hex) of the Secret's data.kubeconfig as stored, usable or not; "" when it is missing or not
// a string. Equal digests are equal kubeconfigs, so a resync of an unchanged Secret can be told apart
// from a rotation without reading it.
std::string kubeconfig_digest(const kube::ObjectView& secret);

}  // namespace myop::runtime::fleet
