// What a watcher needs from the API server for one collection: a page of a LIST and a watch stream.
//
// A narrow interface so that the watcher's state machine is unit-tested with scripted answers, and
// runs against the real server through `make_client_watch_source`.
#pragma once

#include <rapidjson/document.h>

#include <memory>
#include <stop_token>
#include <string>

#include "kube/client.h"
#include "kube/errors.h"
#include "kube/resource.h"
#include "kube/transport.h"

namespace myop::kube {

class WatchSource {
 public:
  virtual ~WatchSource() = default;

  // One page of the collection (a List with items, metadata.resourceVersion and metadata.continue).
  virtual Result<rapidjson::Document> list(const ListOptions& options, std::stop_token stop) = 0;

  // Opens a watch and hands its body to `on_chunk` until it ends (see Transport::stream).
  virtual Result<StreamEnd> watch(const WatchOptions& options, const ChunkHandler& on_chunk,
                                  std::stop_token stop) = 0;

  // "configmaps in namespace a" / "myresources.myorg.io in all namespaces": for logs and messages.
  virtual std::string describe() const = 0;
};

// The collection of `type` in `namespace_name` ("" = all namespaces for namespaced types).
std::shared_ptr<WatchSource> make_client_watch_source(std::shared_ptr<Client> client, ResourceType type,
                                                      std::string namespace_name = {});

}  // namespace myop::kube
