// A test double of the API server for the REST verbs on single objects, each object at its path:
// - GET; POST (create: 409 AlreadyExists when there is one);
// - PUT (update) and merge PATCH, with metadata.resourceVersion in the body as the precondition (a
//   stale one is 409 Conflict), and server-side apply (PATCH application/apply-patch+yaml: creates
//   the object when there is none, else merges it; no field ownership);
// - PUT and PATCH of ".../status" change only the object's status;
// - DELETE, with DeleteOptions' preconditions (uid, resourceVersion: 409 Conflict): an object with
//   finalizers gets metadata.deletionTimestamp and stays (the answer is the object); otherwise it is
//   gone, and the answer is a Status of success (built-in kinds) or the object's last state (custom
//   resources: set_delete_returns_object). A write that leaves an object being deleted without
//   finalizers removes it, as the real server does.
// Several clients share one store, each through a transport of its own that carries a name, so a test
// can tell who wrote what (as the audit log does on the real server), and every request is recorded,
// so a test can tell that nothing was sent. No lists, no watches.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>
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
    std::string method;  // POST, PUT, PATCH, DELETE
    std::string path;    // the object's path
  };
  // A request as it arrived (whatever the answer).
  struct Received {
    std::string who;
    std::string method;
    std::string path;  // as sent: ".../status" for the subresource
    std::string content_type;
    kube::QueryParameters query;
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
  // Every request received from `who` (all when empty), in order.
  std::vector<Received> requests(const std::string& who = {}) const {
    std::lock_guard lock(mutex_);
    std::vector<Received> found;
    for (const auto& request : requests_)
      if (who.empty() || request.who == who) found.push_back(request);
    return found;
  }

  // Whether a DELETE that removes an object answers with the object's last state (as the API server
  // does for custom resources) instead of a Status.
  void set_delete_returns_object(bool returns_object) {
    std::lock_guard lock(mutex_);
    delete_returns_object_ = returns_object;
  }
  // Removes the object at `path` as someone else would: not recorded as a write.
  void erase(const std::string& path) {
    std::lock_guard lock(mutex_);
    objects_.erase(path);
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

  static kube::Response answer(int code, const kube::Object& object) {
    return {code, kube::to_json_string(object.json()), "application/json"};
  }

  void store(const std::string& path, kube::Object object) {
    object.set_resource_version(std::to_string(++resource_version_));
    objects_.insert_or_assign(path, std::move(object));
  }

  // Stores a written object; one being deleted whose last finalizer went is removed instead.
  // Returns the object as stored (its last state when removed).
  kube::Object store_written(const std::string& path, kube::Object object) {
    const kube::ObjectView view = object.view();
    if (view.is_being_deleted() && view.finalizers().empty()) {
      objects_.erase(path);
      return object;
    }
    store(path, std::move(object));
    return objects_.at(path).deep_copy();
  }

  kube::Object created(kube::Object object) {
    if (object.uid().empty())
      object.set_string_member(object.json()["metadata"], "uid", "uid-" + std::to_string(++uid_));
    return object;
  }

  kube::Response remove(const std::string& who, const std::string& path, const kube::Object& options) {
    const auto found = objects_.find(path);
    if (found == objects_.end()) return status(404, "NotFound", path + " not found");
    const kube::ObjectView current = found->second.view();
    if (const auto* uid = options.view().find({"preconditions", "uid"});
        uid != nullptr && uid->IsString() && current.uid() != uid->GetString())
      return status(409, "Conflict", "Precondition failed: UID in precondition does not match");
    if (const auto* version = options.view().find({"preconditions", "resourceVersion"});
        version != nullptr && version->IsString() && current.resource_version() != version->GetString())
      return status(409, "Conflict", "Precondition failed: ResourceVersion in precondition does not match");
    writes_.push_back({who, "DELETE", path});
    if (!current.finalizers().empty()) {
      if (current.is_being_deleted()) return answer(200, found->second);
      kube::Object deleting = found->second.deep_copy();
      deleting.set_string_member(deleting.json()["metadata"], "deletionTimestamp", "2026-12-01T00:00:00Z");
      store(path, std::move(deleting));
      return answer(200, objects_.at(path));
    }
    kube::Object last = std::move(found->second);
    objects_.erase(found);
    if (delete_returns_object_) return answer(200, last);
    return {200,
            R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Success","details":{"name":")" +
                std::string(last.name()) + R"("}})",
            "application/json"};
  }

  kube::Response handle(const std::string& who, const kube::Request& request) {
    std::lock_guard lock(mutex_);
    requests_.push_back({who, request.method, request.path, request.content_type, request.query});
    for (const auto& [prefix, code] : failing_)
      if (request.path.starts_with(prefix)) return status(code, "InternalError", "failing on purpose");
    if (request.method == "GET") {
      const auto found = objects_.find(request.path);
      if (found == objects_.end()) return status(404, "NotFound", request.path + " not found");
      return answer(200, found->second);
    }
    auto body = kube::Object::parse(request.body);
    if (!body) return status(400, "BadRequest", "the body is not JSON");
    if (request.method == "DELETE") return remove(who, request.path, *body);
    if (request.method == "POST") {
      const std::string path = request.path + "/" + std::string(body->name());
      if (objects_.count(path) > 0) return status(409, "AlreadyExists", path + " already exists");
      store(path, created(std::move(body).value()));
      writes_.push_back({who, "POST", path});
      return answer(201, objects_.at(path));
    }
    const bool status_only = request.path.ends_with("/status");
    const std::string path = status_only ? request.path.substr(0, request.path.size() - 7) : request.path;
    const bool apply = request.method == "PATCH" && request.content_type == "application/apply-patch+yaml";
    const auto found = objects_.find(path);
    if (found == objects_.end()) {
      if (!apply || status_only) return status(404, "NotFound", path + " not found");
      store(path, created(std::move(body).value()));
      writes_.push_back({who, "PATCH", path});
      return answer(201, objects_.at(path));
    }
    if (request.method != "PUT" && request.method != "PATCH")
      return status(405, "MethodNotAllowed", request.method);
    if (!apply && !body->resource_version().empty() &&
        body->resource_version() != found->second.resource_version())
      return status(409, "Conflict",
                    "the object has been modified; please apply your changes to the latest "
                    "version and try again");
    kube::Object written = found->second.deep_copy();
    if (status_only) {
      const auto* new_status = body->view().find({"status"});
      if (new_status != nullptr) written.set_member(written.json(), "status", *new_status);
    } else if (request.method == "PUT") {
      written = std::move(body).value();
    } else {
      kube::apply_merge_patch(written, body->json());
    }
    writes_.push_back({who, request.method, path});
    return answer(200, store_written(path, std::move(written)));
  }

  mutable std::mutex mutex_;
  std::map<std::string, kube::Object> objects_;
  std::map<std::string, int> failing_;
  std::vector<Write> writes_;
  std::vector<Received> requests_;
  bool delete_returns_object_ = false;
  long resource_version_ = 100;
  long uid_ = 0;
};

}  // namespace myop::testing
