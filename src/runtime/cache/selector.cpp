#include "runtime/cache/selector.h"

#include <algorithm>

namespace myop::runtime {
namespace {

std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

// Splits at commas outside parentheses ("a in (x,y),b" -> "a in (x,y)", "b").
std::vector<std::string_view> split_requirements(std::string_view text) {
  std::vector<std::string_view> parts;
  int depth = 0;
  std::size_t start = 0;
  for (std::size_t i = 0; i <= text.size(); ++i) {
    if (i == text.size() || (text[i] == ',' && depth == 0)) {
      if (auto part = trim(text.substr(start, i - start)); !part.empty()) parts.push_back(part);
      start = i + 1;
    } else if (text[i] == '(') {
      ++depth;
    } else if (text[i] == ')') {
      --depth;
    }
  }
  return parts;
}

bool valid_key(std::string_view key) {
  return !key.empty() && std::none_of(key.begin(), key.end(), [](char c) {
    return c == ' ' || c == '=' || c == '!' || c == '(' || c == ')' || c == ',';
  });
}

}  // namespace

std::optional<Selector> Selector::parse(std::string_view label_selector, std::string_view field_selector,
                                        std::string* error) {
  Selector selector;
  std::string message;
  if (!parse_labels(label_selector, selector.requirements_, message) ||
      !parse_fields(field_selector, selector.requirements_, message)) {
    if (error) *error = message;
    return std::nullopt;
  }
  return selector;
}

bool Selector::parse_labels(std::string_view text, std::vector<Requirement>& out, std::string& error) {
  for (std::string_view part : split_requirements(text)) {
    Requirement requirement;
    if (part.front() == '!') {
      requirement.op = Operator::not_exists;
      requirement.key = std::string(trim(part.substr(1)));
    } else if (auto at = part.find("!="); at != std::string_view::npos) {
      requirement.op = Operator::not_equals;
      requirement.key = std::string(trim(part.substr(0, at)));
      requirement.values.emplace_back(trim(part.substr(at + 2)));
    } else if (auto equals = part.find('='); equals != std::string_view::npos) {
      requirement.op = Operator::equals;
      requirement.key = std::string(trim(part.substr(0, equals)));
      std::string_view value = part.substr(equals + 1);
      if (!value.empty() && value.front() == '=') value.remove_prefix(1);
      requirement.values.emplace_back(trim(value));
    } else if (auto open = part.find('('); open != std::string_view::npos) {
      std::string_view head = trim(part.substr(0, open));
      const auto space = head.rfind(' ');
      const std::string_view word = space == std::string_view::npos ? "" : head.substr(space + 1);
      if ((word != "in" && word != "notin") || part.back() != ')') {
        error =
            "label selector requirement '" + std::string(part) + "' is not key in (...) or key notin (...)";
        return false;
      }
      requirement.op = word == "in" ? Operator::in : Operator::not_in;
      requirement.key = std::string(trim(head.substr(0, space)));
      std::string_view values = part.substr(open + 1, part.size() - open - 2);
      for (std::string_view value : split_requirements(values)) requirement.values.emplace_back(value);
    } else {
      requirement.op = Operator::exists;
      requirement.key = std::string(part);
    }
    if (!valid_key(requirement.key)) {
      error = "label selector requirement '" + std::string(part) + "' has no valid key";
      return false;
    }
    out.push_back(std::move(requirement));
  }
  return true;
}

bool Selector::parse_fields(std::string_view text, std::vector<Requirement>& out, std::string& error) {
  for (std::string_view part : split_requirements(text)) {
    Requirement requirement;
    std::string_view field;
    if (auto at = part.find("!="); at != std::string_view::npos) {
      requirement.op = Operator::not_equals;
      field = trim(part.substr(0, at));
      requirement.values.emplace_back(trim(part.substr(at + 2)));
    } else if (auto equals = part.find('='); equals != std::string_view::npos) {
      requirement.op = Operator::equals;
      field = trim(part.substr(0, equals));
      std::string_view value = part.substr(equals + 1);
      if (!value.empty() && value.front() == '=') value.remove_prefix(1);
      requirement.values.emplace_back(trim(value));
    } else {
      error = "field selector requirement '" + std::string(part) + "' is not field=value or field!=value";
      return false;
    }
    if (field == "metadata.name") {
      requirement.subject = Subject::name;
    } else if (field == "metadata.namespace") {
      requirement.subject = Subject::namespace_name;
    } else {
      error = "field selector on '" + std::string(field) +
              "' cannot be evaluated by the client (only metadata.name and metadata.namespace)";
      return false;
    }
    out.push_back(std::move(requirement));
  }
  return true;
}

bool Selector::holds(const Requirement& requirement, std::optional<std::string_view> value) {
  const auto listed = [&] {
    return value && std::find(requirement.values.begin(), requirement.values.end(), *value) !=
                        requirement.values.end();
  };
  switch (requirement.op) {
    case Operator::equals:
      return value && *value == requirement.values.front();
    case Operator::not_equals:
      return !value || *value != requirement.values.front();
    case Operator::exists:
      return value.has_value();
    case Operator::not_exists:
      return !value.has_value();
    case Operator::in:
      return listed();
    case Operator::not_in:
      return !listed();
  }
  return false;
}

bool Selector::matches(const kube::ObjectView& object) const {
  return std::all_of(requirements_.begin(), requirements_.end(), [&](const Requirement& requirement) {
    switch (requirement.subject) {
      case Subject::name:
        return holds(requirement, object.name());
      case Subject::namespace_name:
        return holds(requirement, object.namespace_name());
      case Subject::label:
        break;
    }
    return holds(requirement, object.label(requirement.key));
  });
}

}  // namespace myop::runtime
