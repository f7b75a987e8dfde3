// Cluster (cluster.h) on the real API server: reads from the informers' caches, writes with the
// kube client, and puts every write's answer back into the cache (read-your-own-writes), so the next
// reconcile does not act on a stale object and write again.
#pragma once

#include <functional>
#include <memory>

#include "kube/client.h"
#include "myresource/cluster.h"
#include "runtime/event_recorder.h"
#include "runtime/informer_set.h"

namespace myop::myresource {

class KubeCluster final : public Cluster {
 public:
  // Events go through the runtime's recorder (queued, rate-limited, repeats folded into a series).
  KubeCluster(std::shared_ptr<kube::Client> client, std::shared_ptr<runtime::InformerSet> myresources,
              std::shared_ptr<runtime::InformerSet> deployments, std::function<Features()> features,
              std::shared_ptr<runtime::EventRecorder> recorder);

  ObjectPointer get_myresource(std::string_view namespace_name, std::string_view name) override;
  ObjectPointer get_deployment(std::string_view namespace_name, std::string_view name) override;
  Features features() override;

  kube::Result<void> apply_deployment(const kube::Object& desired, std::string_view based_on_resource_version,
                                      std::stop_token stop) override;
  kube::Result<void> delete_deployment(std::string_view namespace_name, std::string_view name,
                                       std::string_view uid, std::stop_token stop) override;
  kube::Result<void> set_myresource_finalizers(std::string_view namespace_name, std::string_view name,
                                               const std::vector<std::string>& finalizers,
                                               std::string_view resource_version,
                                               std::stop_token stop) override;
  kube::Result<void> apply_myresource_status(const kube::Object& body,
                                             std::string_view based_on_resource_version,
                                             std::stop_token stop) override;
  void record_event(const EventSubject& subject, std::string_view type, std::string_view reason,
                    std::string_view action, std::string_view message) override;

 private:
  std::shared_ptr<kube::Client> client_;
  std::shared_ptr<runtime::InformerSet> myresources_;
  std::shared_ptr<runtime::InformerSet> deployments_;
  std::function<Features()> features_;
  std::shared_ptr<runtime::EventRecorder> recorder_;
};

}  // namespace myop::myresource
