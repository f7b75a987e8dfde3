#include "myresource/image_reference.h"

#include <algorithm>
#include <cctype>
#include <vector>

namespace myop::myresource {
namespace {

bool is_lower_alphanumeric(char character) {
  return (character >= 'a' && character <= 'z') || (character >= '0' && character <= '9');
}

bool is_alphanumeric(char character) { return std::isalnum(static_cast<unsigned char>(character)) != 0; }

bool is_hex(char character) { return std::isxdigit(static_cast<unsigned char>(character)) != 0; }

// A path component: [a-z0-9]+ ((\.|_|__|-+)[a-z0-9]+)*
bool is_path_component(std::string_view component) {
  if (component.empty() || !is_lower_alphanumeric(component.front()) ||
      !is_lower_alphanumeric(component.back())) {
    return false;
  }
  for (std::size_t index = 0; index < component.size();) {
    if (is_lower_alphanumeric(component[index])) {
      ++index;
      continue;
    }
    // A separator run: ".", "_", "__" or any number of "-", always followed by an alphanumeric.
    std::size_t run_start = index;
    char separator = component[index];
    while (index < component.size() && component[index] == separator) ++index;
    std::size_t run_length = index - run_start;
    bool valid_run =
        (separator == '.' && run_length == 1) || (separator == '_' && run_length <= 2) || separator == '-';
    if (!valid_run || index == component.size() || !is_lower_alphanumeric(component[index])) return false;
  }
  return true;
}

// A domain label: alphanumeric, hyphens inside only.
bool is_domain_label(std::string_view label) {
  if (label.empty() || !is_alphanumeric(label.front()) || !is_alphanumeric(label.back())) return false;
  return std::ranges::all_of(label,
                             [](char character) { return is_alphanumeric(character) || character == '-'; });
}

// host(.host)*(:port)?
bool is_registry(std::string_view registry) {
  std::size_t colon = registry.find(':');
  std::string_view host = registry.substr(0, colon);
  if (colon != std::string_view::npos) {
    std::string_view port = registry.substr(colon + 1);
    if (port.empty()) return false;
    for (char character : port) {
      if (character < '0' || character > '9') return false;
    }
  }
  std::size_t start = 0;
  while (true) {
    std::size_t dot = host.find('.', start);
    if (!is_domain_label(host.substr(start, dot - start))) return false;
    if (dot == std::string_view::npos) return true;
    start = dot + 1;
  }
}

// algorithm:hex, algorithm = [A-Za-z][A-Za-z0-9]*([-_+.][A-Za-z][A-Za-z0-9]*)*, hex at least 32 long.
bool is_digest(std::string_view digest) {
  std::size_t colon = digest.find(':');
  if (colon == std::string_view::npos) return false;
  std::string_view algorithm = digest.substr(0, colon);
  std::string_view hex = digest.substr(colon + 1);
  if (hex.size() < 32) return false;
  for (char character : hex) {
    if (!is_hex(character)) return false;
  }
  bool expect_letter = true;
  for (char character : algorithm) {
    if (expect_letter) {
      if (std::isalpha(static_cast<unsigned char>(character)) == 0) return false;
      expect_letter = false;
    } else if (character == '-' || character == '_' || character == '+' || character == '.') {
      expect_letter = true;
    } else if (!is_alphanumeric(character)) {
      return false;
    }
  }
  return !algorithm.empty() && !expect_letter;
}

}  // namespace

bool is_valid_tag(std::string_view tag) {
  if (tag.empty() || tag.size() > 128) return false;
  if (tag.front() == '.' || tag.front() == '-') return false;
  return std::ranges::all_of(tag, [](char character) {
    return is_alphanumeric(character) || character == '_' || character == '.' || character == '-';
  });
}

std::optional<ImageReference> parse_image_reference(std::string_view image) {
  ImageReference reference;
  std::size_t at = image.find('@');
  std::string_view name_and_tag = image.substr(0, at);
  if (at != std::string_view::npos) {
    std::string_view digest = image.substr(at + 1);
    if (!is_digest(digest)) return std::nullopt;
    reference.digest = std::string(digest);
  }
  // A tag is a ':' after the last '/': the colon of "reg:5000/app" belongs to the registry.
  std::size_t last_slash = name_and_tag.rfind('/');
  std::size_t tag_colon = name_and_tag.rfind(':');
  std::string_view name = name_and_tag;
  if (tag_colon != std::string_view::npos &&
      (last_slash == std::string_view::npos || tag_colon > last_slash)) {
    std::string_view tag = name_and_tag.substr(tag_colon + 1);
    if (!is_valid_tag(tag)) return std::nullopt;
    reference.tag = std::string(tag);
    name = name_and_tag.substr(0, tag_colon);
  }
  if (name.empty()) return std::nullopt;

  std::vector<std::string_view> components;
  for (std::size_t start = 0;;) {
    std::size_t slash = name.find('/', start);
    components.push_back(name.substr(start, slash - start));
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  // The first component is a registry when the grammar allows it and it cannot be a path component
  // (as the reference grammar itself does, either reading is accepted when both parse).
  std::size_t first_path = 0;
  if (components.size() > 1 && !is_path_component(components.front())) {
    if (!is_registry(components.front())) return std::nullopt;
    first_path = 1;
  }
  for (std::size_t index = first_path; index < components.size(); ++index) {
    if (!is_path_component(components[index])) return std::nullopt;
  }
  reference.repository = std::string(name);
  return reference;
}

std::string image_problem(std::string_view image) {
  std::optional<ImageReference> reference = parse_image_reference(image);
  if (!reference) {
    return "spec.image \"" + std::string(image) +
           "\" is not a valid image reference: expected [registry[:port]/]repository[:tag][@digest] with a "
           "lower-case repository, e.g. registry.example.com:5000/team/app:1.2.3";
  }
  if (reference->tag.empty() && reference->digest.empty()) {
    return "spec.image \"" + std::string(image) +
           "\" must carry a tag or a digest (e.g. app:1.2.3 or app@sha256:<digest>): an untagged image "
           "means :latest, which is not reproducible";
  }
  if (reference->tag == "latest") {
    return "spec.image \"" + std::string(image) +
           "\" must not use the :latest tag: use an immutable version tag (e.g. app:1.2.3) or pin a digest";
  }
  return "";
}

std::string with_tag(const ImageReference& reference, std::string_view tag) {
  return reference.repository + ":" + std::string(tag);
}

}  // namespace myop::myresource
