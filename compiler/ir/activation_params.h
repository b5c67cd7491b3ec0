// An activation node's numeric attributes as zoc::act::Params (zoc/math/activations.h): the
// attributes its Math struct names (kParamA, kParamB), or their op-table defaults when the node
// does not carry them. One place for the interpreter and the emitters to read them. And the
// code a fused convolution's "activation" attribute gives the activation it absorbed.
#pragma once

#include <array>

#include "compiler/ir/graph.h"
#include "compiler/ir/ops.h"
#include "zoc/math/activations.h"

namespace zoc::ir {

inline double activation_param(const Node& node, const char* name) {
  if (!name) return 0.0;
  if (const AttrValue* v = node.attrs.find(name)) return v->f;
  const AttrSpec* spec = find_attr(node.op, name);
  return spec ? spec->default_value : 0.0;
}

template <class Math>
act::Params activation_params(const Node& node) {
  return {activation_param(node, Math::kParamA), activation_param(node, Math::kParamB)};
}

// An activation op as a fused convolution's epilogue: the op, its zoc::act::Kind and Math name.
struct FusedActivation {
  OpKind op;
  act::Kind kind;
  const char* math;  // "Relu": zoc::act::Relu, zoc::act::Kind::kRelu
};

inline constexpr FusedActivation kFusedActivations[] = {
#define ZOC_ACTIVATION(op, grad, math) {OpKind::op, act::Kind::k##math, #math},
#include "compiler/ir/ops.def"
};

// The attribute names of an activation op's parameters (its Math's kParamA, kParamB; null when
// unused): what fuse-activation copies onto the convolution (ops.def's FusedConv2d pass rows).
inline std::array<const char*, 2> activation_param_names(OpKind op) {
  switch (op) {
#define ZOC_ACTIVATION(op, grad, math) \
  case OpKind::op:                     \
    return {act::math::kParamA, act::math::kParamB};
#include "compiler/ir/ops.def"
    default:
      return {nullptr, nullptr};
  }
}

// FusedConv2d's "activation": 0 none, else 1 + the act::Kind it applies (1: ReLU).
inline int fused_activation_code(OpKind op) {
  for (const FusedActivation& a : kFusedActivations) {
    if (a.op == op) return 1 + static_cast<int>(a.kind);
  }
  return 0;
}
inline const FusedActivation* fused_activation(int code) {
  for (const FusedActivation& a : kFusedActivations) {
    if (1 + static_cast<int>(a.kind) == code) return &a;
  }
  return nullptr;
}
// The parameters of a fused convolution's activation: the absorbed op's attributes, which the
// fusion copied onto the convolution (hardtanh's min_val, max_val).
inline act::Params fused_activation_params(const Node& conv) {
  const FusedActivation* a = fused_activation(static_cast<int>(conv.attrs.i("activation")));
  if (!a) return {};
  switch (a->kind) {
#define ZOC_ACTIVATION(op, grad, math) \
  case act::Kind::k##math:             \
    return activation_params<act::math>(conv);
#include "compiler/ir/ops.def"
  }
  return {};
}

}  // namespace zoc::ir
