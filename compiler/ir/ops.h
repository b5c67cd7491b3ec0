// Op kinds and their attribute schemas, expanded from ops.def.
//
// This is what frontends consult to accept an op name and check its attributes, and what the
// printer and verifier use, so that no op name or attribute range is written twice.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace zoc::ir {

enum class OpKind {
#define ZOC_OP(id, spelling, min_in, max_in, user, summary) id,
#include "compiler/ir/ops.def"
};

enum class AttrKind { Int, Pair, Bool, Float, Init };

// How a layer's parameters are initialized when no weights file is given (the `init`
// attribute of conv2d, linear and batchnorm2d, and ParamSpec::init per tensor). The
// enumerators' order matters: an Init attribute's min/max in ops.def bound the schemes its op
// accepts, the first of them being the op's PyTorch default.
enum class InitScheme {
  kPytorchDefault,       // reset_parameters(): conv/linear U(+-1/sqrt(fan_in)); BN by role
  kKaimingNormalFanOut,  // N(0, 2/fan_out): kaiming_normal_(mode='fan_out', nonlinearity='relu')
  kOnes,                 // the constant 1 (BatchNorm's default gamma)
  kZeros,                // the constant 0 (zero-initialized residual gamma)
};

// The model file's spelling of a scheme ("pytorch", "kaiming_normal_fan_out", "ones", "zeros").
std::string_view init_scheme_name(InitScheme scheme);
std::optional<InitScheme> init_scheme_from_name(std::string_view name);

// A default that means "absent unless given"; the op's shape rule resolves it.
inline constexpr double kUnset = -1e300;

struct AttrSpec {
  std::string_view name;
  AttrKind kind;
  bool required;
  double default_value;  // kUnset: no default
  double min;
  double max;
  std::string_view summary;
  bool user = true;  // model files may set it (false: only passes do, see ZOC_PASS_ATTR)
};

struct OpInfo {
  OpKind kind;
  std::string_view name;
  int min_inputs;
  int max_inputs;
  bool user;  // accepted in model files (false: created by passes, or the input)
  std::string_view summary;
  std::span<const AttrSpec> attrs;
};

const OpInfo& op_info(OpKind kind);
std::span<const OpInfo> all_ops();
std::optional<OpKind> op_from_name(std::string_view name);
const AttrSpec* find_attr(OpKind kind, std::string_view name);
std::string_view attr_kind_name(AttrKind kind);

}  // namespace zoc::ir
