// Structural checks of the graph IR (see verify.h).
#include "compiler/ir/verify.h"
#include "compiler/support/sanitize.h"

#include <functional>
#include <map>
#include <set>

#include <fmt/format.h>

namespace zoc::ir {
bool attr_in_range(const AttrSpec& spec, const AttrValue& v) {
  switch (spec.kind) {
    case AttrKind::Int:
      return v.i >= spec.min && v.i <= spec.max;
    case AttrKind::Bool:
      return v.i == 0 || v.i == 1;
    case AttrKind::Pair:
      return v.pair.h >= spec.min && v.pair.h <= spec.max && v.pair.w >= spec.min &&
             v.pair.w <= spec.max;
    case AttrKind::Float:
      return v.f >= spec.min && v.f <= spec.max;
    case AttrKind::Init:
      return v.i >= spec.min && v.i <= spec.max;
  }
  return false;
}

std::string attr_range_text(const AttrSpec& spec) {
  if (spec.kind == AttrKind::Float) return fmt::format("between {:g} and {:g}", spec.min, spec.max);
  return fmt::format("between {} and {}", static_cast<int64_t>(spec.min),
                     static_cast<int64_t>(spec.max));
}

namespace {

using Fail = std::function<void(const Node*, const std::string&)>;

// A node that uses another layer's weights (Node::weights_of, issue 36) names another layer that
// owns its own (dead-code elimination may have removed that one; fusion may have changed its op);
// and every node that declares a tensor under one name declares it alike, since one tensor of
// the weights file serves them all.
void check_shared_weights(const Graph& g, const Fail& fail) {
  std::map<std::string, const Node*> seen;
  std::map<std::string, std::pair<const ParamSpec*, const Node*>> declared;
  for (const Node& n : g.nodes) seen.emplace(n.name, &n);
  for (const Node& n : g.nodes) {
    if (!n.weights_of.empty()) {
      auto it = seen.find(n.weights_of);
      if (n.weights_of == n.name || (it != seen.end() && !it->second->weights_of.empty())) {
        fail(&n, fmt::format("uses the weights of '{}', which is not another layer with weights "
                             "of its own",
                             shown_text(n.weights_of)));
      }
    }
    for (const ParamSpec& p : n.params) {
      auto [it, fresh] = declared.emplace(p.name, std::make_pair(&p, &n));
      const ParamSpec& first = *it->second.first;
      if (!fresh && (first.shape != p.shape || first.dtype != p.dtype)) {
        fail(&n, fmt::format("declares tensor '{}' unlike layer '{}' does (another shape or "
                             "dtype); one tensor cannot be both",
                             shown_text(p.name), shown_text(it->second.second->name)));
      }
    }
  }
}

}  // namespace

bool verify(const Graph& g, Diagnostics& diags, const VerifyOptions& options) {
  const size_t before = diags.error_count();
  auto fail = [&](const Node* n, const std::string& msg) {
    if (n) {
      diags.error(n->loc, fmt::format("IR verifier: layer '{}' ({}): {}", shown_text(n->name),
                                      op_info(n->op).name, msg));
    } else {
      diags.error(SourceLoc{g.name, 0, 0}, "IR verifier: " + msg);
    }
  };

  if (g.nodes.empty()) fail(nullptr, "the graph has no nodes");
  size_t input_count = 0, labels_count = 0;
  std::set<std::string> names;  // of nodes and of extra results: every value's name is unique
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    const OpInfo& info = op_info(n.op);
    if (n.op == OpKind::Input) ++input_count;
    if (n.op == OpKind::Labels) ++labels_count;
    if (n.name.empty()) fail(&n, "node has an empty name");
    if (!names.insert(n.name).second) fail(&n, "duplicate layer name");
    const auto nin = static_cast<int>(n.inputs.size());
    if (nin < info.min_inputs || nin > info.max_inputs) {
      fail(&n, fmt::format("has {} inputs, expects {}..{}", nin, info.min_inputs, info.max_inputs));
    }
    for (ValueId v : n.inputs) {
      if (v < 0 || static_cast<size_t>(v) >= g.values.size()) {
        fail(&n, fmt::format("input %{} does not exist", v));
      } else if (g.values[v].producer < 0 || static_cast<size_t>(g.values[v].producer) >= i) {
        fail(&n, fmt::format("input %{} is not produced by an earlier node", v));
      }
    }
    for (ValueId v : Graph::results(n)) {
      const bool extra = v != n.output;
      if (v < 0 || static_cast<size_t>(v) >= g.values.size() ||
          g.values[v].producer != static_cast<int32_t>(i)) {
        fail(&n, fmt::format("{} is not linked back to this node",
                             extra ? "an extra result" : "output value"));
        continue;
      }
      if (extra && g.values[v].name.empty()) fail(&n, "an extra result has no name");
      if (extra && !names.insert(g.values[v].name).second) {
        fail(&n, fmt::format("duplicate value name '{}'", shown_text(g.values[v].name)));
      }
      if (options.require_types && !g.values[v].type) {
        fail(&n, fmt::format(
                     "{} has no type (shape inference did not run or failed)",
                     extra ? fmt::format("result '%{}'", shown_text(g.values[v].name)) : "output"));
      }
    }
    for (const auto& [key, value] : n.attrs.items()) {
      const AttrSpec* spec = find_attr(n.op, key);
      if (!spec) {
        fail(&n, fmt::format("unknown attribute '{}'", key));
      } else if (spec->kind != value.kind) {
        fail(&n, fmt::format("attribute '{}' must be {}", key, attr_kind_name(spec->kind)));
      } else if (!attr_in_range(*spec, value)) {
        fail(&n, fmt::format("attribute '{}' out of range ({})", key, attr_range_text(*spec)));
      }
    }
    if (!n.operand_tensor.empty() && (!is_binary_op(n.op) || n.inputs.size() != 1)) {
      fail(&n, fmt::format("has the tensor operand '{}', which only a one-input add, sub, mul "
                           "or div takes",
                           n.operand_tensor));
    }
    if (!n.scalar_from.empty() && (!is_binary_op(n.op) || !n.attrs.has("scalar"))) {
      fail(&n, fmt::format("names '{}' as the source of its constant, but it has no `scalar`",
                           n.scalar_from));
    }
    if (n.operand_role != OperandRole::kUnknown && n.operand_tensor.empty() &&
        n.scalar_from.empty()) {
      fail(&n, "says whether its operand is a parameter or a buffer, but has no such operand");
    }
    for (const AttrSpec& spec : info.attrs) {
      if (spec.required && !n.attrs.has(spec.name)) {
        fail(&n, fmt::format("missing required attribute '{}'", spec.name));
      }
    }
  }
  if (input_count != 1) fail(nullptr, fmt::format("expects one input node, found {}", input_count));
  if (labels_count > 1)
    fail(nullptr, fmt::format("expects at most one labels node, found {}", labels_count));
  if (g.outputs.empty()) fail(nullptr, "the graph has no outputs");
  std::set<ValueId> outputs;  // several outputs are allowed, each once: a name per output
  for (ValueId v : g.outputs) {
    if (v < 0 || static_cast<size_t>(v) >= g.values.size()) {
      fail(nullptr, fmt::format("output %{} does not exist", v));
    } else if (!outputs.insert(v).second) {
      fail(nullptr, fmt::format("output %{} is listed twice", g.value_name(v)));
    }
  }
  check_shared_weights(g, fail);
  if (diags.error_count() == before && g.target) verify_lowering(g, diags);
  return diags.error_count() == before;
}

}  // namespace zoc::ir
