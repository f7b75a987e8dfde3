#pragma once
// Label and field selectors evaluated on the client, with the API server's grammar:
//
//   labels:  key=value  key==value  key!=value  key  !key  key in (a,b)  key notin (a,b)
//   fields:  metadata.name=x  metadata.namespace=x  (and !=)
//
// requirements joined by commas, all of which must hold. An informer asks the server for the objects
// its selectors match; the cached writer uses the same selectors to decide whether an object it just
// wrote belongs in that informer's cache (a watch with a selector only ever shows matching objects).
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kube/object.h"

namespace myop::runtime {

class Selector {
 public:
  // Everything matches.
  Selector() = default;

  // nullopt when either text does not parse or names a field this client cannot evaluate (the
  // message says which part); the caller then cannot decide locally.
  static std::optional<Selector> parse(std::string_view label_selector, std::string_view field_selector,
                                       std::string* error = nullptr);

  bool matches(const kube::ObjectView& object) const;
  bool empty() const { return requirements_.empty(); }

 private:
  enum class Operator { equals, not_equals, exists, not_exists, in, not_in };
  enum class Subject { label, name, namespace_name };
  struct Requirement {
    Subject subject = Subject::label;
    std::string key;
    Operator op = Operator::exists;
    std::vector<std::string> values;
  };

  static bool parse_labels(std::string_view text, std::vector<Requirement>& out, std::string& error);
  static bool parse_fields(std::string_view text, std::vector<Requirement>& out, std::string& error);
  static bool holds(const Requirement& requirement, std::optional<std::string_view> value);

  std::vector<Requirement> requirements_;
};

}  // namespace myop::runtime
