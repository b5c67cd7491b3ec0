// The small expression language of the YAML model format: `$planes`, `${planes * 4}`,
// `${i == 0 ? 2 : 1}`.
//
// Parameterised blocks need a little arithmetic (a bottleneck's output is 4 x planes, the first
// block of a stage strides) and nothing more, so this is integers and booleans with the usual
// C operators, overflow-checked, and no way to loop, call or reach outside the given names.
// Strings exist only to choose among named options (`init`): a quoted literal ('zeros'), a
// string param, `==`/`!=` and `?:`; no operator builds or takes apart a string.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <variant>

#include "zoc/core/expected.h"

namespace zoc::yaml {

// An expression value: an integer, a boolean or a string.
struct ExprValue {
  std::variant<int64_t, bool, std::string> v;

  bool is_int() const { return v.index() == 0; }
  bool is_bool() const { return v.index() == 1; }
  bool is_string() const { return v.index() == 2; }
  int64_t as_int() const { return std::get<0>(v); }
  bool as_bool() const { return std::get<1>(v); }
  const std::string& as_string() const { return std::get<2>(v); }
  std::string str() const;  // 42, true, 'text'
};

using ExprEnv = std::map<std::string, ExprValue, std::less<>>;

// Evaluates `text` (without the surrounding "${" "}"). Errors say what is wrong and at which
// character offset of the expression.
Expected<ExprValue> eval_expr(std::string_view text, const ExprEnv& env);

}  // namespace zoc::yaml
