// Standard base64 (RFC 4648 section 4, with padding), as Kubernetes writes Secret data, kubeconfig
// *-data fields and a webhook's caBundle.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace myop::base {

std::string encode_base64(std::string_view bytes);

// nullopt for a character outside the alphabet, data after padding, or a length that is not a
// multiple of 4; whitespace (line breaks) is ignored.
std::optional<std::string> decode_base64(std::string_view text);

}  // namespace myop::base
