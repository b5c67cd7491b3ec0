// The one sanitizer through which every user-provided name passes before it reaches generated
// source code.
//
// Layer names come from model files and TorchScript module paths ("layer1.0.conv1",
// "features/0", anything at all). Pasting them into C++ unescaped would let a model file
// inject code; this maps any string to a safe, readable C++ identifier, and to a safe comment.
#pragma once

#include <string>
#include <string_view>

namespace zoc {

// "layer1.0.conv1" -> "layer1_0_conv1"; leading digits and C++ keywords get a prefix;
// non-identifier bytes become '_'; empty input becomes "_". Distinct inputs may map to the
// same identifier: callers that need uniqueness add a numeric suffix.
std::string sanitize_identifier(std::string_view name);

// Text safe inside a // comment or a "..." string literal: printable ASCII only, with
// backslashes, quotes and control bytes escaped, and no line breaks.
std::string sanitize_comment(std::string_view text);

}  // namespace zoc
