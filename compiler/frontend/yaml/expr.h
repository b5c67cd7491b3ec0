// The small expression language of the YAML model format: `$planes`, `${planes * 4}`,
// `${i == 0 ? 2 : 1}`.
//
// Parameterised blocks need a little arithmetic (a bottleneck's output is 4 x planes, the first
// block of a stage strides) and nothing more, so this is integers and booleans with the usual
// C operators, overflow-checked, and no way to loop, call or reach outside the given names.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <variant>

#include "zoc/expected.h"

namespace zoc::yaml {

// An expression value: an integer or a boolean.
struct ExprValue {
  std::variant<int64_t, bool> v;

  bool is_int() const { return v.index() == 0; }
  bool is_bool() const { return v.index() == 1; }
  int64_t as_int() const { return std::get<0>(v); }
  bool as_bool() const { return std::get<1>(v); }
  std::string str() const;
};

using ExprEnv = std::map<std::string, ExprValue, std::less<>>;

// Evaluates `text` (without the surrounding "${" "}"). Errors say what is wrong and at which
// character offset of the expression.
Expected<ExprValue> eval_expr(std::string_view text, const ExprEnv& env);

}  // namespace zoc::yaml
