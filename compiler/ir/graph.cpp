// Graph construction helpers and small queries.
#include "compiler/ir/graph.h"

#include <cassert>
#include <set>

#include <fmt/format.h>

#include "compiler/support/checked_math.h"

namespace zoc::ir {

std::string_view dtype_name(DType dtype) {
  switch (dtype) {
    case DType::F32:
      return "f32";
    case DType::F16:
      return "f16";
    case DType::BF16:
      return "bf16";
    case DType::I64:
      return "i64";
    case DType::I32:
      return "i32";
  }
  return "?";
}

int64_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::F32:
      return 4;
    case DType::F16:
      return 2;
    case DType::BF16:
      return 2;
    case DType::I64:
      return 8;
    case DType::I32:
      return 4;
  }
  return 0;
}

std::string_view layout_name(Layout layout) {
  switch (layout) {
    case Layout::NCHW:
      return "NCHW";
    case Layout::NHWC:
      return "NHWC";
    case Layout::NC:
      return "NC";
  }
  return "?";
}

std::string TensorType::str() const {
  std::string s = batched ? "N" : "";
  for (int64_t d : dims) s += fmt::format("{}{}", s.empty() ? "" : "x", d);
  return fmt::format("{} {}", s.empty() ? "scalar" : s, dtype_name(dtype));
}

int64_t TensorType::sample_numel() const {
  auto n = checked_product_of(dims);
  assert(n.has_value());
  return n.value_or(0);
}

std::optional<AttrValue> default_attr(const AttrSpec& spec) {
  if (spec.required || spec.default_value == kUnset) return std::nullopt;
  AttrValue v;
  v.kind = spec.kind;
  v.i = static_cast<int64_t>(spec.default_value);
  v.pair = {v.i, v.i};
  v.f = spec.default_value;
  return v;
}

Attrs with_defaults(OpKind op, const Attrs& given) {
  Attrs attrs;
  for (const AttrSpec& spec : op_info(op).attrs) {
    if (const AttrValue* value = given.find(spec.name)) {
      attrs.set(spec.name, *value);
    } else if (auto v = default_attr(spec)) {
      attrs.set(spec.name, *v);
    }
  }
  return attrs;
}

void Attrs::set(std::string_view name, AttrValue value) {
  for (auto& [k, v] : items_) {
    if (k == name) {
      v = value;
      return;
    }
  }
  items_.emplace_back(std::string(name), value);
}

bool Attrs::has(std::string_view name) const { return find(name) != nullptr; }

const AttrValue* Attrs::find(std::string_view name) const {
  for (const auto& [k, v] : items_) {
    if (k == name) return &v;
  }
  return nullptr;
}

int64_t Attrs::i(std::string_view name) const {
  const AttrValue* v = find(name);
  assert(v && (v->kind == AttrKind::Int || v->kind == AttrKind::Bool));
  return v ? v->i : 0;
}

Pair Attrs::pair(std::string_view name) const {
  const AttrValue* v = find(name);
  assert(v && v->kind == AttrKind::Pair);
  return v ? v->pair : Pair{};
}

double Attrs::f(std::string_view name) const {
  const AttrValue* v = find(name);
  assert(v && v->kind == AttrKind::Float);
  return v ? v->f : 0.0;
}

std::optional<InitScheme> Attrs::init(std::string_view name) const {
  const AttrValue* v = find(name);
  if (!v) return std::nullopt;
  assert(v->kind == AttrKind::Init);
  return static_cast<InitScheme>(v->i);
}

int32_t Graph::add_node(OpKind op, std::string node_name, std::vector<ValueId> inputs, Attrs attrs,
                        SourceLoc loc) {
  const auto index = static_cast<int32_t>(nodes.size());
  const auto out = static_cast<ValueId>(values.size());
  values.push_back(Value{std::nullopt, index, {}, std::nullopt});
  Node& node = nodes.emplace_back();
  node.op = op;
  node.name = std::move(node_name);
  node.inputs = std::move(inputs);
  node.output = out;
  node.attrs = std::move(attrs);
  node.loc = std::move(loc);
  return index;
}

ValueId Graph::add_extra_output(int32_t node, std::string value_name) {
  const auto v = static_cast<ValueId>(values.size());
  values.push_back(Value{std::nullopt, node, std::move(value_name), std::nullopt});
  nodes[node].extra_outputs.push_back(v);
  return v;
}

std::vector<ValueId> Graph::results(const Node& node) {
  std::vector<ValueId> all{node.output};
  all.insert(all.end(), node.extra_outputs.begin(), node.extra_outputs.end());
  return all;
}

const std::string& Graph::value_name(ValueId v) const {
  const Value& value = values[v];
  return value.name.empty() ? nodes[value.producer].name : value.name;
}

const Node* Graph::find_node(std::string_view node_name) const {
  for (const Node& n : nodes) {
    if (n.name == node_name) return &n;
  }
  return nullptr;
}

namespace {
// Elements of the tensors of one kind: trainable (and not frozen), frozen, or buffers.
int64_t count_params(const Graph& g, bool trainable, bool frozen = false) {
  int64_t total = 0;
  std::set<std::string_view> seen;
  for (const Node& n : g.nodes) {
    for (const ParamSpec& p : n.params) {
      if (p.trainable == trainable && p.frozen == frozen && seen.insert(p.name).second) {
        total += checked_product_of(p.shape).value_or(0);
      }
    }
  }
  return total;
}
}  // namespace

int64_t Graph::trainable_param_count() const { return count_params(*this, true); }

int64_t Graph::buffer_count() const { return count_params(*this, false); }

int64_t Graph::frozen_param_count() const { return count_params(*this, true, true); }

bool is_binary_op(OpKind op) {
  return op == OpKind::Add || op == OpKind::Sub || op == OpKind::Mul || op == OpKind::Div;
}

bool one_value_operand(const Node& n) {
  return n.attrs.flag("one_value") || (n.attrs.has("param_rank") && n.attrs.i("param_rank") == 0);
}

bool is_depthwise_conv(const Graph& g, const Node& conv) {
  if (conv.op != OpKind::Conv2d && conv.op != OpKind::FusedConv2d) return false;
  const int64_t groups = conv.attrs.i("groups");
  const std::vector<int64_t>& in = g.type(conv.inputs[0]).dims;
  const std::vector<int64_t>& out = g.type(conv.output).dims;
  return groups > 1 && in.size() == 3 && out.size() == 3 && in[0] == groups && out[0] == groups;
}

}  // namespace zoc::ir
