// A test double of the API server for the REST verbs on single objects: GET, POST (create), PUT
// (update, with metadata.resourceVersion as the precondition: a stale one is 409 Conflict) and PATCH
// (merge patches), each object at its path. Several clients share one store, each through a
// transport of its own that carries a name, so a test can tell who wrote what (as the audit log does
// on the real server). No lists, no watches.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "kube/merge_patch.h"
#include "kube/object.h"
#include "kube/transport.h"

namespace myop::testing {

class InMemoryApiServer : public std::enable_shared_from_this<InMemoryApiServer> {
 public:
  struct Write {
    std::string who;
    std::string method;  // POST, PUT, PATCH
    std::string path;    // the object's path
  };

  // A transport whose requests are recorded under `who`.
  std::shared_ptr<kube::Transport> transport(std::string who) {
    return std::make_shared<ClientTransport>(shared_from_this(), std::move(who));
  }

  // Stores `json` at `path` (e.g. "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/x"), as
  // a person would apply it: not recorded as a write.
  void put(const std::string& path, const std::string& json) {
    std::lock_guard lock(mutex_);
    auto object = kube::Object::parse(json);
    if (!object) throw std::invalid_argument("not JSON: " + json);
    store(path, std::move(object).value());
  }

  // The object at `path` as JSON; empty when there is none.
  std::string get(const std::string& path) const {
    std::lock_guard lock(mutex_);
    const auto found = objects_.find(path);
    return found == objects_.end() ? std::string() : kube::to_json_string(found->second.json());
  }
  kube::Object object(const std::string& path) const {
    std::lock_guard lock(mutex_);
    return objects_.at(path).deep_copy();
  }
  bool exists(const std::string& path) const {
    std::lock_guard lock(mutex_);
    return objects_.count(path) > 0;
  }

  // Requests for paths starting with `prefix` fail with HTTP `code` until cleared.
  void fail(const std::string& prefix, int code) {
    std::lock_guard lock(mutex_);
    failing_[prefix] = code;
  }
  void clear_failures() {
    std::lock_guard lock(mutex_);
    failing_.clear();
  }

  std::vector<Write> writes(const std::string& who = {}, const std::string& path = {}) const {
    std::lock_guard lock(mutex_);
    std::vector<Write> found;
    for (const auto& write : writes_)
      if ((who.empty() || write.who == who) && (path.empty() || write.path == path)) found.push_back(write);
    return found;
  }

 private:
  class ClientTransport final : public kube::Transport {
   public:
    ClientTransport(std::shared_ptr<InMemoryApiServer> server, std::string who)
        : server_(std::move(server)), who_(std::move(who)) {}
    kube::Result<kube::Response> send(const kube::Request& request, std::stop_token) override {
      return server_->handle(who_, request);
    }
    kube::Result<kube::StreamEnd> stream(const kube::Request&, const kube::ChunkHandler&, std::stop_token,
                                         const kube::StreamOptions&) override {
      return kube::make_error(kube::Reason::Unknown, "the in-memory API server has no watches");
    }
    const std::string& host() const override { return host_; }

   private:
    std::shared_ptr<InMemoryApiServer> server_;
    std::string who_;
    std::string host_ = "in-memory:443";
  };

  static kube::Response status(int code, const std::string& reason, const std::string& message) {
    return {code,
            R"({"kind":"Status","apiVersion":"v1","status":"Failure","reason":")" + reason +
                R"(","message":")" + message + R"(","code":)" + std::to_string(code) + "}",
            "application/json"};
  }

  void store(const std::string& path, kube::Object object) {
    object.set_resource_version(std::to_string(++resource_version_));
    objects_.insert_or_assign(path, std::move(object));
  }

  kube::Response handle(const std::string& who, const kube::Request& request) {
    std::lock_guard lock(mutex_);
    for (const auto& [prefix, code] : failing_)
      if (request.path.starts_with(prefix)) return status(code, "InternalError", "failing on purpose");
    if (request.method == "GET") {
      const auto found = objects_.find(request.path);
      if (found == objects_.end()) return status(404, "NotFound", request.path + " not found");
      return {200, kube::to_json_string(found->second.json()), "application/json"};
    }
    auto body = kube::Object::parse(request.body);
    if (!body) return status(400, "BadRequest", "the body is not JSON");
    if (request.method == "POST") {
      const std::string path = request.path + "/" + std::string(body->name());
      if (objects_.count(path) > 0) return status(409, "AlreadyExists", path + " already exists");
      store(path, std::move(body).value());
      writes_.push_back({who, "POST", path});
      return {201, kube::to_json_string(objects_.at(path).json()), "application/json"};
    }
    const auto found = objects_.find(request.path);
    if (found == objects_.end()) return status(404, "NotFound", request.path + " not found");
    if (request.method == "PUT") {
      if (body->resource_version() != found->second.resource_version())
        return status(409, "Conflict", "the object has been modified");
      store(request.path, std::move(body).value());
    } else if (request.method == "PATCH") {
      kube::Object patched = found->second.deep_copy();
      kube::apply_merge_patch(patched, body->json());
      store(request.path, std::move(patched));
    } else {
      return status(405, "MethodNotAllowed", request.method);
    }
    writes_.push_back({who, request.method, request.path});
    return {200, kube::to_json_string(objects_.at(request.path).json()), "application/json"};
  }

  mutable std::mutex mutex_;
  std::map<std::string, kube::Object> objects_;
  std::map<std::string, int> failing_;
  std::vector<Write> writes_;
  long resource_version_ = 100;
};

}  // namespace myop::testing
