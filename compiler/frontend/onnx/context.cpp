// NodeContext: what an op handler sees of its ONNX node (see internal.h).
//
// ONNX's checker has already checked each node against its op schema (input counts, attribute
// names and types), so the readers here mostly turn ONNX's forms into the IR's: an input that
// must be known when compiling is looked up among the constants, an attribute absent from the
// node keeps the handler's default (the schema's), and anything the IR cannot express becomes
// one reason in the list of unsupported nodes instead of an error of its own. The readers
// refuse what only some handlers understand unless asked for it: a view of an activation
// (viewed), a constant holding the batch size (shape_constant), a step of a decomposed op
// (those go to ops_decomposed.cpp before a handler sees them).
#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "compiler/frontend/onnx/internal.h"
#include "compiler/ir/verify.h"

namespace zoc::onnx::detail {

ir::AttrValue int_attr(int64_t v) { return ir::AttrValue{ir::AttrKind::Int, v, {}, 0}; }
ir::AttrValue bool_attr(bool v) { return ir::AttrValue{ir::AttrKind::Bool, v ? 1 : 0, {}, 0}; }
ir::AttrValue float_attr(double v) { return ir::AttrValue{ir::AttrKind::Float, 0, {}, v}; }
ir::AttrValue pair_attr(ir::Pair p) { return ir::AttrValue{ir::AttrKind::Pair, 0, p, 0}; }

std::string target_str(const std::vector<int64_t>& to) {
  std::vector<std::string> items;
  for (int64_t x : to) items.push_back(x == kBatchDim ? "N" : std::to_string(x));
  return fmt::format("[{}]", fmt::join(items, ", "));
}

bool Constant::has_batch() const {
  return std::find(batch.begin(), batch.end(), true) != batch.end();
}

std::string view_name(Val::View view) {
  switch (view) {
    case Val::View::kNone:
      return "an activation";
    case Val::View::kChannelsLast:
      return "a channels-last [N, H, W, C] view (Transpose perm [0, 2, 3, 1])";
    case Val::View::kGrouped:
      return "a grouped [N, g, C/g, H, W] view (Reshape)";
    case Val::View::kGroupedTransposed:
      return "a transposed grouped [N, C/g, g, H, W] view";
    case Val::View::kSequence:
      return "a [N, 1, F] view of features (Reshape)";
  }
  return "a view";
}

std::vector<int64_t> viewed_dims(const Val& v, const std::vector<int64_t>& d) {
  return frontend::viewed_dims(v.view, v.groups, d);
}

std::string step_name(Partial::Step step) {
  using S = Partial::Step;
  switch (step) {
    case S::kGeluScaled:
      return "x / sqrt(2) of GELU's erf form";
    case S::kGeluErf:
      return "erf(x / sqrt(2)) of GELU's erf form";
    case S::kGeluErfPlus1:
      return "1 + erf(x / sqrt(2)) of GELU's erf form";
    case S::kGeluUnhalved:
      return "x * (1 + erf(x / sqrt(2))) of GELU's erf form";
    case S::kNormMean:
      return "the mean of a decomposed LayerNormalization";
    case S::kNormCentered:
      return "x - mean of a decomposed LayerNormalization";
    case S::kNormSquared:
      return "(x - mean)^2 of a decomposed LayerNormalization";
    case S::kNormVariance:
      return "the variance of a decomposed LayerNormalization";
    case S::kNormVarEps:
      return "variance + eps of a decomposed LayerNormalization";
    case S::kNormStd:
      return "sqrt(variance + eps) of a decomposed LayerNormalization";
    case S::kNormalized:
      return "the normalized x of a decomposed LayerNormalization";
    case S::kNormScaled:
      return "the scaled x of a decomposed LayerNormalization";
    case S::kPadded:
      return "the result of a Pad with zeros";
    case S::kFlattened:
      return "a tensor flattened with its batch (a Reshape to [-1])";
  }
  return "a step of a decomposed op";
}

int64_t NodeContext::opset() const { return t_.model_.opset; }

bool NodeContext::has_input(size_t i) const {
  return i < static_cast<size_t>(n_.input_size()) && !n_.input(static_cast<int>(i)).empty();
}

const Val& NodeContext::in(size_t i) const {
  static const Val kAbsent{};
  return has_input(i) ? t_.get(n_.input(static_cast<int>(i))) : kAbsent;
}

const Val* NodeContext::viewed(size_t i) {
  const Val& v = in(i);
  if (v.is(Val::Kind::kActivation)) return &v;
  if (!has_input(i)) {
    fail(fmt::format("input {} is missing", i + 1));
  } else if (v.is(Val::Kind::kPartial)) {
    fail(fmt::format("input {} ('{}') is {}, used otherwise than as its next step", i + 1,
                     shown_text(v.name), step_name(v.partial->step)));
  } else {
    fail(
        fmt::format("input {} ('{}') is a constant where zoc needs a tensor computed from the "
                    "model's input",
                    i + 1, shown_text(v.name)));
  }
  return nullptr;
}

std::optional<ir::ValueId> NodeContext::activation(size_t i) {
  const Val* v = viewed(i);
  if (!v) return std::nullopt;
  if (v->view != Val::View::kNone) {
    const std::vector<int64_t>* d = dims(v->id);
    fail(
        fmt::format("input {} ('{}') is {}{}; zoc follows such a view only into the ops of the "
                    "models that use it (ConvNeXt's LayerNormalization, MatMul and elementwise "
                    "ops; ShuffleNet's Transpose and Reshape)",
                    i + 1, shown_text(v->name), view_name(v->view),
                    d ? fmt::format(" [N, {}]", fmt::join(viewed_dims(*v, *d), ", ")) : ""));
    return std::nullopt;
  }
  return v->id;
}

std::optional<NodeContext::Operands> NodeContext::activation_pair() {
  auto a = activation(0);
  auto b = a ? activation(1) : std::nullopt;
  const std::vector<int64_t>* da = b ? dims(*a) : nullptr;
  const std::vector<int64_t>* db = da ? dims(*b) : nullptr;
  if (!db) return std::nullopt;
  return Operands{*a, *b, *da, *db};
}

const Val* NodeContext::shape_constant(size_t i, const char* what) {
  const Val& v = in(i);
  if (v.is(Val::Kind::kConstant)) return &v;
  fail(has_input(i) ? fmt::format("its {} ('{}') is computed at run time; zoc needs an "
                                  "initializer or a constant there",
                                  what, shown_text(n_.input(static_cast<int>(i))))
                    : fmt::format("its {} is missing", what));
  return nullptr;
}

const Val* NodeContext::constant(size_t i, const char* what) {
  const Val* v = shape_constant(i, what);
  if (v && v->constant->has_batch()) {
    fail(fmt::format("its {} ('{}') depends on the batch size, which zoc keeps dynamic", what,
                     shown_text(v->name)));
    return nullptr;
  }
  return v;
}

std::optional<double> NodeContext::scalar(size_t i, const char* what) {
  const Val* v = constant(i, what);
  if (!v) return std::nullopt;
  if (v->constant->numel() != 1) {
    fail(fmt::format("its {} has {} elements, where ONNX expects a scalar", what,
                     v->constant->numel()));
    return std::nullopt;
  }
  return v->constant->floating ? static_cast<double>(v->constant->f[0])
                               : static_cast<double>(v->constant->i[0]);
}

const std::vector<int64_t>* NodeContext::dims(ir::ValueId v) { return t_.dims(v); }

std::optional<int64_t> NodeContext::declared_batch() const { return t_.batch_; }

std::vector<const pb::NodeProto*> NodeContext::readers_of_output() const {
  std::vector<const pb::NodeProto*> out;
  const std::string& name = n_.output(0);
  if (t_.graph_outputs_.count(name) > 0) out.push_back(nullptr);
  for (int k = 0; k < t_.g_.node_size(); ++k) {
    if (!t_.needed_[static_cast<size_t>(k)]) continue;
    const pb::NodeProto& r = t_.g_.node(k);
    if (std::find(r.input().begin(), r.input().end(), name) != r.input().end()) out.push_back(&r);
  }
  return out;
}

const Val* NodeContext::value_now(const std::string& name) const {
  auto it = t_.env_.find(name);
  return it == t_.env_.end() ? nullptr : &it->second;
}

bool NodeContext::output_used(size_t k) const {
  if (k >= static_cast<size_t>(n_.output_size())) return false;
  const std::string& name = n_.output(static_cast<int>(k));
  if (name.empty()) return false;
  auto it = t_.readers_.find(name);
  return (it != t_.readers_.end() && it->second > 0) || t_.graph_outputs_.count(name) > 0;
}

namespace {

const pb::AttributeProto* find_attr(const pb::NodeProto& n, const char* name) {
  for (const pb::AttributeProto& a : n.attribute()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}

}  // namespace

bool NodeContext::has_attr(const char* name) const { return find_attr(n_, name) != nullptr; }

// One reader per attribute type: absent leaves `out`, another type is a failure.
#define ZOC_ONNX_ATTR_READER(T, TYPE, GET)                                                \
  bool NodeContext::attr(const char* name, T& out) {                                      \
    const pb::AttributeProto* a = find_attr(n_, name);                                    \
    if (!a) return true;                                                                  \
    if (a->type() != pb::AttributeProto::TYPE) {                                          \
      return fail(fmt::format("attribute '{}' is {}, where ONNX has {}", name,            \
                              pb::AttributeProto::AttributeType_Name(a->type()), #TYPE)); \
    }                                                                                     \
    GET;                                                                                  \
    return true;                                                                          \
  }
ZOC_ONNX_ATTR_READER(int64_t, INT, out = a->i())
ZOC_ONNX_ATTR_READER(double, FLOAT, out = decimal_of_float(a->f()))
ZOC_ONNX_ATTR_READER(std::vector<int64_t>, INTS, out.assign(a->ints().begin(), a->ints().end()))
ZOC_ONNX_ATTR_READER(std::string, STRING, out = a->s())
#undef ZOC_ONNX_ATTR_READER

bool NodeContext::fail(const std::string& why) {
  if (!failed_) t_.problems_.push_back({index_, why});
  failed_ = true;
  return false;
}

const float* NodeContext::noted_int8_scale(ir::ValueId v) const {
  const auto it = t_.int8_scales_.find(v);
  return it == t_.int8_scales_.end() ? nullptr : &it->second;
}

bool NodeContext::int8_scale(ir::ValueId v, float scale) {
  const auto [it, fresh] = t_.int8_scales_.emplace(v, scale);
  if (fresh || it->second == scale) return true;
  return fail(
      fmt::format("a second int8 scale, {}, for a tensor already quantized with {}: zoc "
                  "keeps one scale per tensor",
                  scale, it->second));
}

std::optional<ir::ValueId> NodeContext::emit(ir::OpKind op, std::vector<ir::ValueId> inputs,
                                             ir::Attrs given, std::vector<ParamBinding> params) {
  // Numbers from the file are checked against the op table before shape rules divide by them.
  for (const auto& [key, value] : given.items()) {
    const ir::AttrSpec* spec = ir::find_attr(op, key);
    if (spec && (spec->kind != value.kind || !ir::attr_in_range(*spec, value))) {
      const std::string shown = value.kind == ir::AttrKind::Pair
                                    ? fmt::format("{}x{}", value.pair.h, value.pair.w)
                                : value.kind == ir::AttrKind::Float ? fmt::format("{:g}", value.f)
                                                                    : std::to_string(value.i);
      fail(fmt::format("{} {} is outside what zoc supports ({})", key, shown,
                       ir::attr_range_text(*spec)));
      return std::nullopt;
    }
  }
  const std::string name = t_.names_->name_for(index_, op, params);
  // Attributes in op-table order with defaults written out, as the other frontends do.
  ir::Attrs attrs = ir::with_defaults(op, given);
  const int32_t index = t_.graph_.add_node(op, name, std::move(inputs), std::move(attrs),
                                           node_loc(t_.path_, n_, index_));
  if (!params.empty()) t_.params_[index] = std::move(params);
  return t_.graph_.nodes[static_cast<size_t>(index)].output;
}

void NodeContext::result(Val v) { result_at(0, std::move(v)); }

void NodeContext::rebind_input(size_t i, Val v) {
  v.name = n_.input(static_cast<int>(i));
  const std::string name = v.name;
  t_.bind(name, std::move(v));
}

void NodeContext::result_at(size_t k, Val v) {
  if (k >= static_cast<size_t>(n_.output_size()) || n_.output(static_cast<int>(k)).empty()) return;
  v.name = n_.output(static_cast<int>(k));
  const std::string name = v.name;
  t_.bind(name, std::move(v));
}

ir::Node& NodeContext::producer(ir::ValueId v) {
  return t_.graph_.nodes[static_cast<size_t>(t_.graph_.values[static_cast<size_t>(v)].producer)];
}

std::vector<ParamBinding>& NodeContext::params_of(const ir::Node& node) {
  return t_.params_[static_cast<int32_t>(&node - t_.graph_.nodes.data())];
}

size_t NodeContext::readers_of_input(size_t i) const {
  if (!has_input(i)) return 0;
  const std::string& name = n_.input(static_cast<int>(i));
  auto it = t_.readers_.find(name);
  return (it == t_.readers_.end() ? 0 : it->second) + t_.graph_outputs_.count(name);
}

size_t NodeContext::readers_of_value(ir::ValueId v) const {
  size_t n = 0;
  auto names = t_.names_of_value_.find(v);
  if (names == t_.names_of_value_.end()) return 0;
  for (const std::string& name : names->second) {
    auto val = t_.env_.find(name);
    if (val == t_.env_.end() || !val->second.is(Val::Kind::kActivation) || val->second.id != v) {
      continue;
    }
    auto it = t_.readers_.find(name);
    n += (it == t_.readers_.end() ? 0 : it->second) + t_.graph_outputs_.count(name);
  }
  return n;
}

}  // namespace zoc::onnx::detail
