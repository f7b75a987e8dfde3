#include "kube/connect.h"

#include <utility>

namespace myop::kube {

Result<Connection> connect(const ConfigSearch& search, const TransportOptions& transport,
                           std::string field_manager, ClientOptions client_options) {
  auto config = load_client_config(search);
  if (!config)
    return make_error(Reason::InvalidConfiguration,
                      "no usable cluster configuration: " + config.error().message);
  auto https = make_https_transport(config.value(), transport);
  if (!https)
    return make_error(Reason::InvalidConfiguration,
                      "cannot set up the connection to " + config->server + ": " + https.error().message);
  Connection connection{std::move(config).value(), std::move(https).value(), nullptr};
  connection.client =
      std::make_shared<Client>(connection.transport, std::move(field_manager), client_options);
  return connection;
}

}  // namespace myop::kube
