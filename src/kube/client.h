// REST verbs on any resource type, namespaced or cluster-scoped, core or named group.
//
// Objects travel as rapidjson::Document. Answers about built-in kinds (Deployments, Secrets, Leases, ...)
// are asked for in protobuf with a JSON fallback (kube/protobuf.h), answers about custom resources in
// CBOR with a JSON fallback (kube/cbor.h: served where the CBORServingAndStorage gate is on), reads and
// writes alike; each answer is decoded by its Content-Type into the same tree. What the client sends (a
// write's body) is JSON. Every verb returns the
// server's answer (the object as stored) or an Error parsed from the server's metav1.Status; nothing throws.
// Blocking; thread-safe (the transport is shared). Answers are read with a size limit
// (kMaximumObjectJsonBytes, a LIST page kMaximumListJsonBytes) and parsed by the bounded parser of
// kube/json_parser.h.
#pragma once

#include <rapidjson/document.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>

#include "kube/errors.h"
#include "kube/resource.h"
#include "kube/transport.h"

namespace myop::kube {

struct GetOptions {
  std::string resource_version;  // "" = most recent (quorum read); "0" = any cached version
};

struct ListOptions {
  std::string label_selector;  // "app=a,tier in (x,y)"
  std::string field_selector;  // "metadata.name=a"
  // "shardRange(object.metadata.namespace, '0x...', '0x...')||...": KEP-5866, alpha in 1.36 behind the
  // ShardedListAndWatch gate. A server that applies it says so in the list's metadata.shardInfo; one
  // that does not ignores it and sends everything.
  std::string shard_selector;
  std::optional<std::int64_t> limit;
  std::string continue_token;  // metadata.continue of the previous page
  std::string resource_version;
  std::string resource_version_match;  // "", "NotOlderThan" or "Exact"
  std::optional<int> timeout_seconds;
};

struct WriteOptions {
  std::string field_manager;  // recorded in managedFields; defaults to the transport's user agent name
  bool dry_run = false;
};

enum class PatchType {
  Merge,           // application/merge-patch+json (RFC 7386)
  Json,            // application/json-patch+json (RFC 6902)
  StrategicMerge,  // application/strategic-merge-patch+json (built-in types only)
  Apply,           // application/apply-patch+yaml: server-side apply (JSON is valid YAML)
};
std::string_view patch_content_type(PatchType type);

struct PatchOptions {
  std::string field_manager;  // required by the server for Apply
  bool force = false;         // Apply only: take ownership of conflicting fields
  bool dry_run = false;
};

struct DeleteOptions {
  std::string propagation_policy;  // "", "Foreground", "Background" or "Orphan"
  std::string precondition_uid;
  std::string precondition_resource_version;
  std::optional<std::int64_t> grace_period_seconds;
  bool dry_run = false;
};

struct WatchOptions {
  std::string resource_version;
  std::string resource_version_match;  // "NotOlderThan" with send_initial_events
  std::string label_selector;
  std::string field_selector;
  std::string shard_selector;  // as ListOptions::shard_selector; a watch never says whether it applied
  bool allow_bookmarks = true;
  bool send_initial_events = false;  // WatchList
  // The server ends the watch after this; without bookmarks, keep it below stream.idle_timeout.
  std::optional<int> timeout_seconds;
  StreamOptions stream{};
};

// How reads travel.
enum class WireFormat {
  Json,
  Protobuf,  // application/vnd.kubernetes.protobuf where a built-in schema exists, else JSON
  Cbor,      // application/cbor where the server serves it (custom resources behind a gate), else JSON
};
std::string_view wire_format_name(WireFormat format);  // "json", "protobuf", "cbor"

struct ClientOptions {
  WireFormat built_in_kinds = WireFormat::Protobuf;  // Protobuf or Json
  WireFormat custom_resources = WireFormat::Cbor;    // Cbor or Json: every kind without a built-in schema
};

class Client {
 public:
  // `default_field_manager` names the program in managedFields when a write names no manager.
  Client(std::shared_ptr<Transport> transport, std::string default_field_manager, ClientOptions options = {});

  Result<rapidjson::Document> get(const ResourceType& type, std::string_view namespace_name,
                                  std::string_view name, const GetOptions& options = {},
                                  std::stop_token stop = {});

  // One page (or everything when no limit), at most kMaximumListJsonBytes. The answer is a List with
  // items and metadata.continue.
  Result<rapidjson::Document> list(const ResourceType& type, std::string_view namespace_name,
                                   const ListOptions& options = {}, std::stop_token stop = {});

  // Every page of a list joined into one List (items in server order, metadata of the last page). When a
  // continue token expires (410) in the middle, the list restarts once without a limit, like client-go's
  // pager does.
  Result<rapidjson::Document> list_all(const ResourceType& type, std::string_view namespace_name,
                                       ListOptions options = {}, std::stop_token stop = {});

  // POST. The namespace comes from the argument (the object's metadata.namespace may be absent).
  Result<rapidjson::Document> create(const ResourceType& type, std::string_view namespace_name,
                                     const rapidjson::Value& object, const WriteOptions& options = {},
                                     std::stop_token stop = {});

  // PUT to metadata.name. A metadata.resourceVersion in `object` is the precondition: a stale one gives
  // Conflict (409).
  Result<rapidjson::Document> update(const ResourceType& type, std::string_view namespace_name,
                                     const rapidjson::Value& object, const WriteOptions& options = {},
                                     std::stop_token stop = {});

  // PUT to the status subresource (only .status changes; spec changes are ignored by the server).
  Result<rapidjson::Document> update_status(const ResourceType& type, std::string_view namespace_name,
                                            const rapidjson::Value& object, const WriteOptions& options = {},
                                            std::stop_token stop = {});

  // PATCH with `body` of the given type. `subresource` is "" or e.g. "status".
  Result<rapidjson::Document> patch(const ResourceType& type, std::string_view namespace_name,
                                    std::string_view name, PatchType patch_type, std::string_view body,
                                    const PatchOptions& options = {}, std::string_view subresource = {},
                                    std::stop_token stop = {});

  // Server-side apply of `object` (it must carry apiVersion, kind and metadata.name). A field owned by
  // another manager gives Conflict with one cause per field unless options.force.
  Result<rapidjson::Document> apply(const ResourceType& type, std::string_view namespace_name,
                                    const rapidjson::Value& object, const PatchOptions& options,
                                    std::string_view subresource = {}, std::stop_token stop = {});

  // DELETE. The answer is the object (still present while finalizers or foreground deletion hold it) or
  // a Status of success.
  Result<rapidjson::Document> remove(const ResourceType& type, std::string_view namespace_name,
                                     std::string_view name, const DeleteOptions& options = {},
                                     std::stop_token stop = {});

  // Opens a watch and hands its raw newline-delimited JSON to `on_chunk` (see Transport::stream). The
  // watch engine (kube/watch.h) parses the events and reconnects; this is only the HTTP part.
  Result<StreamEnd> watch(const ResourceType& type, std::string_view namespace_name,
                          const WatchOptions& options, const ChunkHandler& on_chunk,
                          std::stop_token stop = {});

  // Discovery: the APIResourceList of one group version ("/api/v1" or "/apis/g/v").
  Result<rapidjson::Document> discover(std::string_view group, std::string_view version,
                                       std::stop_token stop = {});

  // Looks `kind` up by discovery and returns its ResourceType (plural, scope). NotFound when the server
  // does not serve it (yet).
  Result<ResourceType> resource_for_kind(std::string_view group, std::string_view version,
                                         std::string_view kind, std::stop_token stop = {});

  // Polls the CRD (every 250 ms of the transport's clock) until condition Established is True and its
  // group version is served, or `timeout`.
  Result<void> wait_for_crd_established(std::string_view crd_name, std::chrono::milliseconds timeout,
                                        std::stop_token stop = {});

  // Sends any request and parses its answer (JSON, or protobuf when the request accepted it) of at most
  // `request.maximum_response_bytes`; non-2xx becomes an Error.
  Result<rapidjson::Document> request_json(const Request& request, std::stop_token stop = {});

  // The Accept header for reads of `type`: protobuf with a JSON fallback for a built-in kind, CBOR with a
  // JSON fallback for any other, as the options ask; "" (JSON) otherwise.
  std::string read_accept(const ResourceType& type) const;
  const ClientOptions& options() const { return options_; }

  Transport& transport() { return *transport_; }
  const std::string& default_field_manager() const { return default_field_manager_; }

 private:
  Result<rapidjson::Document> write_json(const ResourceType& type, std::string_view method, std::string path,
                                         const rapidjson::Value& object, const WriteOptions& options,
                                         std::stop_token stop);

  std::shared_ptr<Transport> transport_;
  std::string default_field_manager_;
  ClientOptions options_;
};

// The query parameters of a list / watch, exposed for unit tests of path building.
QueryParameters list_query(const ListOptions& options);
QueryParameters watch_query(const WatchOptions& options);

}  // namespace myop::kube
