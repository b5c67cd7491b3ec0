// A float32 read from a model file (an ONNX attribute or initializer, a TorchScript one-element
// parameter) as the shortest decimal that reads back as it (1e-05, not 9.99999975e-06): the value
// its writer meant, in one place so that every route gives the IR the same number. The int8 pass
// stores its float32 scales the same way.
#pragma once

#include <fmt/format.h>

#include <cstdlib>

namespace zoc {

inline double decimal_of_float(float v) {
  // fmt writes the shortest decimal that reads back as the same float.
  return std::strtod(fmt::format("{}", v).c_str(), nullptr);
}

}  // namespace zoc
