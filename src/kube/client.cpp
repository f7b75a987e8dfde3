#include "kube/client.h"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>

#include "kube/cbor.h"
#include "kube/json_parser.h"
#include "kube/object.h"
#include "kube/protobuf.h"

namespace myop::kube {
namespace {

std::string to_json(const rapidjson::Value& value) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
  value.Accept(writer);
  return std::string(buffer.GetString(), buffer.GetSize());
}

void add_write_query(QueryParameters& query, const std::string& field_manager, bool dry_run) {
  if (!field_manager.empty()) query.emplace_back("fieldManager", field_manager);
  if (dry_run) query.emplace_back("dryRun", "All");
}

Error missing_name(std::string_view verb) {
  return make_error(Reason::BadRequest, std::string(verb) + ": the object has no metadata.name");
}

bool condition_is_true(const rapidjson::Value& object, std::string_view type) {
  const JsonValue* conditions = ObjectView(object).find({"status", "conditions"});
  if (conditions == nullptr || !conditions->IsArray()) return false;
  return std::ranges::any_of(conditions->GetArray(), [&](const JsonValue& condition) {
    const JsonValue* condition_type = find_member(condition, "type");
    const JsonValue* status = find_member(condition, "status");
    return condition_type != nullptr && condition_type->IsString() && status != nullptr &&
           status->IsString() &&
           std::string_view(condition_type->GetString(), condition_type->GetStringLength()) == type &&
           std::string_view(status->GetString(), status->GetStringLength()) == "True";
  });
}

}  // namespace

std::string_view patch_content_type(PatchType type) {
  switch (type) {
    case PatchType::Merge:
      return "application/merge-patch+json";
    case PatchType::Json:
      return "application/json-patch+json";
    case PatchType::StrategicMerge:
      return "application/strategic-merge-patch+json";
    case PatchType::Apply:
      return "application/apply-patch+yaml";
  }
  return "application/merge-patch+json";
}

QueryParameters list_query(const ListOptions& options) {
  QueryParameters query;
  if (!options.label_selector.empty()) query.emplace_back("labelSelector", options.label_selector);
  if (!options.field_selector.empty()) query.emplace_back("fieldSelector", options.field_selector);
  if (!options.shard_selector.empty()) query.emplace_back("shardSelector", options.shard_selector);
  if (options.limit) query.emplace_back("limit", std::to_string(*options.limit));
  if (!options.continue_token.empty()) query.emplace_back("continue", options.continue_token);
  if (!options.resource_version.empty()) query.emplace_back("resourceVersion", options.resource_version);
  if (!options.resource_version_match.empty())
    query.emplace_back("resourceVersionMatch", options.resource_version_match);
  if (options.timeout_seconds) query.emplace_back("timeoutSeconds", std::to_string(*options.timeout_seconds));
  return query;
}

QueryParameters watch_query(const WatchOptions& options) {
  QueryParameters query{{"watch", "true"}};
  if (!options.resource_version.empty()) query.emplace_back("resourceVersion", options.resource_version);
  if (!options.resource_version_match.empty())
    query.emplace_back("resourceVersionMatch", options.resource_version_match);
  if (!options.label_selector.empty()) query.emplace_back("labelSelector", options.label_selector);
  if (!options.field_selector.empty()) query.emplace_back("fieldSelector", options.field_selector);
  if (!options.shard_selector.empty()) query.emplace_back("shardSelector", options.shard_selector);
  if (options.allow_bookmarks) query.emplace_back("allowWatchBookmarks", "true");
  if (options.send_initial_events) query.emplace_back("sendInitialEvents", "true");
  if (options.timeout_seconds) query.emplace_back("timeoutSeconds", std::to_string(*options.timeout_seconds));
  return query;
}

std::string_view wire_format_name(WireFormat format) {
  switch (format) {
    case WireFormat::Protobuf:
      return "protobuf";
    case WireFormat::Cbor:
      return "cbor";
    case WireFormat::Json:
      break;
  }
  return "json";
}

Client::Client(std::shared_ptr<Transport> transport, std::string default_field_manager, ClientOptions options)
    : transport_(std::move(transport)),
      default_field_manager_(std::move(default_field_manager)),
      options_(options) {}

std::string Client::read_accept(const ResourceType& type) const {
  if (protobuf_schema_known(type.api_version(), type.kind))
    return options_.built_in_kinds == WireFormat::Protobuf ? std::string(kProtobufOrJsonAccept)
                                                           : std::string();
  return options_.custom_resources == WireFormat::Cbor ? std::string(kCborOrJsonAccept) : std::string();
}

Result<rapidjson::Document> Client::request_json(const Request& request, std::stop_token stop) {
  auto response = transport_->send(request, stop);
  if (!response) return std::move(response).error();
  if (response->status_code < 200 || response->status_code > 299) {
    Error error = error_from_response(response->status_code, response->body);
    if (!error.retry_after) error.retry_after = response->retry_after;
    return error;
  }
  auto document = is_protobuf_media_type(response->content_type) ? decode_protobuf_document(response->body)
                  : is_cbor_media_type(response->content_type)
                      ? decode_cbor_document(response->body)
                      : parse_json_document(response->body, JsonLimits{request.maximum_response_bytes});
  if (!document) {
    Error error = std::move(document).error();
    error.message = request.method + " " + request.path + ": the API server answered HTTP " +
                    std::to_string(response->status_code) +
                    " with a body the client cannot use: " + error.message;
    return error;
  }
  return std::move(document).value();
}

Result<rapidjson::Document> Client::get(const ResourceType& type, std::string_view namespace_name,
                                        std::string_view name, const GetOptions& options,
                                        std::stop_token stop) {
  Request request;
  request.path = object_path(type, namespace_name, name);
  request.accept = read_accept(type);
  if (!options.resource_version.empty())
    request.query.emplace_back("resourceVersion", options.resource_version);
  return request_json(request, stop);
}

Result<rapidjson::Document> Client::list(const ResourceType& type, std::string_view namespace_name,
                                         const ListOptions& options, std::stop_token stop) {
  Request request;
  request.path = collection_path(type, namespace_name);
  request.query = list_query(options);
  request.accept = read_accept(type);
  request.maximum_response_bytes = kMaximumListJsonBytes;
  return request_json(request, stop);
}

Result<rapidjson::Document> Client::list_all(const ResourceType& type, std::string_view namespace_name,
                                             ListOptions options, std::stop_token stop) {
  auto first = list(type, namespace_name, options, stop);
  if (!first) return first;
  rapidjson::Document result = std::move(first).value();
  auto& allocator = result.GetAllocator();
  if (!result.HasMember("items") || !result["items"].IsArray())
    result.AddMember("items", rapidjson::Value(rapidjson::kArrayType), allocator);
  std::string continue_token = string_at(result, {"metadata", "continue"});
  while (!continue_token.empty()) {
    options.continue_token = continue_token;
    options.resource_version.clear();  // the server refuses resourceVersion together with continue
    options.resource_version_match.clear();
    auto page = list(type, namespace_name, options, stop);
    if (!page) {
      if (is_gone(page.error())) {
        // The continue token outlived etcd's compaction window: a consistent snapshot is no longer
        // available page by page, so take the whole list at once (client-go's pager does the same).
        ListOptions whole = options;
        whole.limit.reset();
        whole.continue_token.clear();
        return list(type, namespace_name, whole, stop);
      }
      return page;
    }
    auto& items = page.value()["items"];
    if (items.IsArray())
      for (auto& item : items.GetArray())
        result["items"].PushBack(rapidjson::Value(item, allocator), allocator);
    continue_token = string_at(page.value(), {"metadata", "continue"});
    if (page.value().HasMember("metadata")) result["metadata"].CopyFrom(page.value()["metadata"], allocator);
  }
  return result;
}

// POST or PUT of a whole object as JSON, with the field manager and dry-run query parameters. Like every
// write, its answer (the object as stored) comes in the encoding reads of the type use.
Result<rapidjson::Document> Client::write_json(const ResourceType& type, std::string_view method,
                                               std::string path, const rapidjson::Value& object,
                                               const WriteOptions& options, std::stop_token stop) {
  Request request;
  request.method = std::string(method);
  request.path = std::move(path);
  request.accept = read_accept(type);
  request.body = to_json(object);
  request.content_type = "application/json";
  add_write_query(request.query,
                  options.field_manager.empty() ? default_field_manager_ : options.field_manager,
                  options.dry_run);
  return request_json(request, stop);
}

Result<rapidjson::Document> Client::create(const ResourceType& type, std::string_view namespace_name,
                                           const rapidjson::Value& object, const WriteOptions& options,
                                           std::stop_token stop) {
  return write_json(type, "POST", collection_path(type, namespace_name), object, options, stop);
}

Result<rapidjson::Document> Client::update(const ResourceType& type, std::string_view namespace_name,
                                           const rapidjson::Value& object, const WriteOptions& options,
                                           std::stop_token stop) {
  const std::string_view name = ObjectView(object).name();
  if (name.empty()) return missing_name("update");
  return write_json(type, "PUT", object_path(type, namespace_name, name), object, options, stop);
}

Result<rapidjson::Document> Client::update_status(const ResourceType& type, std::string_view namespace_name,
                                                  const rapidjson::Value& object, const WriteOptions& options,
                                                  std::stop_token stop) {
  const std::string_view name = ObjectView(object).name();
  if (name.empty()) return missing_name("update_status");
  return write_json(type, "PUT", object_path(type, namespace_name, name, "status"), object, options, stop);
}

Result<rapidjson::Document> Client::patch(const ResourceType& type, std::string_view namespace_name,
                                          std::string_view name, PatchType patch_type, std::string_view body,
                                          const PatchOptions& options, std::string_view subresource,
                                          std::stop_token stop) {
  Request request;
  request.method = "PATCH";
  request.path = object_path(type, namespace_name, name, subresource);
  request.accept = read_accept(type);
  request.body = std::string(body);
  request.content_type = std::string(patch_content_type(patch_type));
  std::string field_manager = options.field_manager;
  if (field_manager.empty() && patch_type == PatchType::Apply) field_manager = default_field_manager_;
  add_write_query(request.query, field_manager, options.dry_run);
  if (options.force && patch_type == PatchType::Apply) request.query.emplace_back("force", "true");
  return request_json(request, stop);
}

Result<rapidjson::Document> Client::apply(const ResourceType& type, std::string_view namespace_name,
                                          const rapidjson::Value& object, const PatchOptions& options,
                                          std::string_view subresource, std::stop_token stop) {
  const std::string_view name = ObjectView(object).name();
  if (name.empty()) return missing_name("apply");
  return patch(type, namespace_name, name, PatchType::Apply, to_json(object), options, subresource, stop);
}

Result<rapidjson::Document> Client::remove(const ResourceType& type, std::string_view namespace_name,
                                           std::string_view name, const DeleteOptions& options,
                                           std::stop_token stop) {
  rapidjson::Document body(rapidjson::kObjectType);
  auto& allocator = body.GetAllocator();
  body.AddMember("kind", "DeleteOptions", allocator);
  body.AddMember("apiVersion", "v1", allocator);
  if (!options.propagation_policy.empty())
    body.AddMember("propagationPolicy", rapidjson::Value(options.propagation_policy.c_str(), allocator),
                   allocator);
  if (options.grace_period_seconds)
    body.AddMember("gracePeriodSeconds",
                   rapidjson::Value(static_cast<int64_t>(*options.grace_period_seconds)), allocator);
  if (!options.precondition_uid.empty() || !options.precondition_resource_version.empty()) {
    rapidjson::Value preconditions(rapidjson::kObjectType);
    if (!options.precondition_uid.empty())
      preconditions.AddMember("uid", rapidjson::Value(options.precondition_uid.c_str(), allocator),
                              allocator);
    if (!options.precondition_resource_version.empty())
      preconditions.AddMember("resourceVersion",
                              rapidjson::Value(options.precondition_resource_version.c_str(), allocator),
                              allocator);
    body.AddMember("preconditions", preconditions, allocator);
  }
  Request request;
  request.method = "DELETE";
  request.path = object_path(type, namespace_name, name);
  request.accept = read_accept(type);
  request.body = to_json(body);
  request.content_type = "application/json";
  if (options.dry_run) request.query.emplace_back("dryRun", "All");
  return request_json(request, stop);
}

Result<StreamEnd> Client::watch(const ResourceType& type, std::string_view namespace_name,
                                const WatchOptions& options, const ChunkHandler& on_chunk,
                                std::stop_token stop) {
  Request request;
  request.path = collection_path(type, namespace_name);
  request.query = watch_query(options);
  request.accept = read_accept(type);
  return transport_->stream(request, on_chunk, stop, options.stream);
}

Result<rapidjson::Document> Client::discover(std::string_view group, std::string_view version,
                                             std::stop_token stop) {
  Request request;
  request.path = group_version_path(group, version);
  return request_json(request, stop);
}

Result<ResourceType> Client::resource_for_kind(std::string_view group, std::string_view version,
                                               std::string_view kind, std::stop_token stop) {
  auto list = discover(group, version, stop);
  if (!list) return std::move(list).error();
  const auto resources = list.value().FindMember("resources");
  if (resources != list.value().MemberEnd() && resources->value.IsArray()) {
    for (const auto& resource : resources->value.GetArray()) {
      const std::string name = string_at(resource, {"name"});
      if (string_at(resource, {"kind"}) != kind || name.find('/') != std::string::npos) continue;
      const JsonValue* namespaced = find_member(resource, "namespaced");
      return ResourceType{std::string(group), std::string(version), name,
                          namespaced != nullptr && namespaced->IsBool() && namespaced->GetBool(),
                          std::string(kind)};
    }
  }
  return make_error(Reason::NotFound, "the API server does not serve kind " + std::string(kind) + " in " +
                                          group_version_path(group, version));
}

Result<void> Client::wait_for_crd_established(std::string_view crd_name, std::chrono::milliseconds timeout,
                                              std::stop_token stop) {
  const base::Clock& clock = *transport_->clock();
  const auto deadline = clock.now() + timeout;
  std::string last_problem = "not looked at yet";
  while (clock.now() < deadline) {
    if (stop.stop_requested())
      return make_error(Reason::Cancelled, "waiting for CRD " + std::string(crd_name) + " cancelled");
    auto crd = get(resources::custom_resource_definitions(), "", crd_name, {}, stop);
    if (!crd) {
      if (!is_not_found(crd.error())) return std::move(crd).error();
      last_problem = "it does not exist";
    } else if (!condition_is_true(crd.value(), "Established")) {
      last_problem = "condition Established is not True";
    } else {
      // Established means the handler is installed; discovery may lag a moment behind.
      const std::string group = string_at(crd.value(), {"spec", "group"});
      const std::string kind = string_at(crd.value(), {"spec", "names", "kind"});
      const JsonValue* versions = ObjectView(crd.value()).find({"spec", "versions"});
      bool all_served = true;
      if (versions != nullptr && versions->IsArray()) {
        for (const auto& version : versions->GetArray()) {
          const JsonValue* served = find_member(version, "served");
          if (served == nullptr || !served->IsBool() || !served->GetBool()) continue;
          auto found = resource_for_kind(group, string_at(version, {"name"}), kind, stop);
          if (!found) {
            all_served = false;
            last_problem = "discovery does not list it yet: " + found.error().message;
            break;
          }
        }
      }
      if (all_served) return {};
    }
    clock.sleep_for(stop, std::chrono::milliseconds(250));
  }
  return make_error(Reason::Timeout, "CRD " + std::string(crd_name) + " was not Established within " +
                                         std::to_string(timeout.count()) + " ms: " + last_problem);
}

}  // namespace myop::kube
