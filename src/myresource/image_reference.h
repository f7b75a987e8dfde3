// Container image references: [registry[:port]/]repository[:tag][@digest].
//
// The operator needs two things from an image string: is it pinned (a tag other than latest, or a
// digest), and what is the same repository at another tag (the canary image). Both hinge on telling
// the registry port in "reg:5000/app" apart from a tag, which is why this is parsed once, here.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace myop::myresource {

struct ImageReference {
  std::string repository;  // everything before the tag, registry and port included: "reg:5000/team/app"
  std::string tag;         // "" when absent
  std::string digest;      // "sha256:<hex>" without the '@', "" when absent
};

// Parses and checks the grammar of distribution/reference (the same one the CRD's CEL rule uses).
// nullopt when `image` is not a valid reference.
std::optional<ImageReference> parse_image_reference(std::string_view image);

// True for a tag an image may carry: [A-Za-z0-9_][A-Za-z0-9_.-]{0,127}.
bool is_valid_tag(std::string_view tag);

// "" when `image` is a valid, pinned reference; otherwise what is wrong with it and how to fix it,
// in the words of the CRD's validation messages.
std::string image_problem(std::string_view image);

// The same repository at `tag`. The digest is dropped: it pins the old content, not the new tag.
std::string with_tag(const ImageReference& reference, std::string_view tag);

}  // namespace myop::myresource
