// An activation node's numeric attributes as zoc::act::Params (zoc/math/activations.h): the
// attributes its Math struct names (kParamA, kParamB), or their op-table defaults when the node
// does not carry them. One place for the interpreter and the emitters to read them.
#pragma once

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

}  // namespace zoc::ir
