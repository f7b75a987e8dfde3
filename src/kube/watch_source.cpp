#include "kube/watch_source.h"

#include <utility>

namespace myop::kube {
namespace {

class ClientWatchSource final : public WatchSource {
 public:
  ClientWatchSource(std::shared_ptr<Client> client, ResourceType type, std::string namespace_name)
      : client_(std::move(client)), type_(std::move(type)), namespace_name_(std::move(namespace_name)) {}

  Result<rapidjson::Document> list(const ListOptions& options, std::stop_token stop) override {
    return client_->list(type_, namespace_name_, options, stop);
  }

  Result<StreamEnd> watch(const WatchOptions& options, const ChunkHandler& on_chunk,
                          std::stop_token stop) override {
    return client_->watch(type_, namespace_name_, options, on_chunk, stop);
  }

  std::string describe() const override {
    std::string description = type_.qualified_resource();
    if (!type_.namespaced) return description;
    return description +
           (namespace_name_.empty() ? " in all namespaces" : " in namespace " + namespace_name_);
  }

 private:
  std::shared_ptr<Client> client_;
  ResourceType type_;
  std::string namespace_name_;
};

}  // namespace

std::shared_ptr<WatchSource> make_client_watch_source(std::shared_ptr<Client> client, ResourceType type,
                                                      std::string namespace_name) {
  return std::make_shared<ClientWatchSource>(std::move(client), std::move(type), std::move(namespace_name));
}

}  // namespace myop::kube
