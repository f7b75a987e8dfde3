// Member clusters described by ClusterProfiles (multicluster.x-k8s.io/v1alpha1, SIG-Multicluster's
// cluster inventory API; its CRD is config/crd/bases of the sigs.k8s.io/cluster-inventory-api module),
// with the credentials of the access providers the operator is configured with, as that API's own
// consumer library does (its pkg/access): a ClusterProfile's status.accessProviders[] (or the deprecated
// credentialProviders[]) names a provider and gives the cluster's server and CA; the operator's own
// provider file says which exec credential plugin gets a credential for that provider's clusters.
//
// The command that runs is the operator's configuration, never the profile's: whoever writes a
// ClusterProfile chooses a server and a CA, not a program. For that reason the profile-sourced
// extensions that add arguments or environment variables to the plugin
// (clusterprofiles.multicluster.x-k8s.io/exec/additional-args and /additional-envs) are ignored, as
// the consumer library's Ignore policy does. The cluster's `client.authentication.k8s.io/exec`
// extension (data for the plugin) is not passed either. A profile whose cluster asks for
// insecure-skip-tls-verify or a proxy is refused, naming the field.
//
// A ClusterProfile's member is named `<namespace>/<name>` (a name no kubeconfig Secret can have).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "kube/config.h"
#include "kube/errors.h"
#include "kube/object.h"
#include "kube/resource.h"
#include "runtime/fleet/kubeconfig_secret.h"

namespace myop::runtime::fleet {

kube::ResourceType cluster_profiles();

// One provider of the operator's provider file.
struct AccessProvider {
  std::string name;
  kube::ExecConfig exec;
};

// The provider file, in cluster-inventory-api's format:
//   {"providers": [{"name": "...", "execConfig": {"apiVersion": "client.authentication.k8s.io/v1",
//     "command": "...", "args": [...], "env": [{"name": "...", "value": "..."}],
//     "provideClusterInfo": true}}]}
// `origin` names the file in errors. Every provider needs a name (unique) and a command.
base::Result<std::vector<AccessProvider>, std::string> parse_access_providers(std::string_view json,
                                                                              std::string_view origin);

// Reads a ClusterProfile as the API server returns it, with the first of its access providers (then
// credential providers) that `providers` configures. Errors have reason InvalidConfiguration and start
// with "ClusterProfile <namespace>/<name>". MemberSource::digest covers the provider entry used and the
// provider's configuration, so a change of either re-engages the member.
kube::Result<MemberSource> read_cluster_profile(const kube::ObjectView& profile,
                                                const std::vector<AccessProvider>& providers);

}  // namespace myop::runtime::fleet
