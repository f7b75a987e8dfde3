#pragma once
// From "where is the cluster" to a client of it in one call: the configuration search (kubeconfig,
// context, in-cluster; kube/config.h), the HTTPS transport (kube/transport.h) and the client, as
// client-go's clientcmd + kubernetes.NewForConfig and kube-rs's Client::try_default do. Each failure is
// a sentence that names what was looked at and what is wrong with it.
#include <memory>
#include <string>

#include "kube/client.h"
#include "kube/config.h"
#include "kube/errors.h"
#include "kube/transport.h"

namespace myop::kube {

struct Connection {
  ClientConfig config;  // the server, context and credentials found
  std::shared_ptr<Transport> transport;
  std::shared_ptr<Client> client;
};

// Fails with InvalidConfiguration: "no usable cluster configuration: ..." when the search finds none,
// "cannot set up the connection to <server>: ..." when its CA, certificate or key are unusable.
// `field_manager` names the client's server-side apply writes.
Result<Connection> connect(const ConfigSearch& search, const TransportOptions& transport,
                           std::string field_manager, ClientOptions client_options = {});

}  // namespace myop::kube
