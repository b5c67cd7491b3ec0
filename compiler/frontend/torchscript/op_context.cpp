// OpContext, what an ATen op handler (aten_ops.cpp) sees of its node: typed readers of the
// arguments TorchScript passes after constant folding, parameters and the layers that own them,
// the shapes of activations, and emitting IR nodes. Apart from the handlers so that each file
// stays one subject.
#include <fmt/format.h>

#include "compiler/frontend/torchscript/internal.h"

namespace zoc::torchscript::detail {

using Kind = Val::Kind;

// --- OpContext: what a handler sees of its node --------------------------------------------

const Val& OpContext::in(size_t i) const { return t_.get(n_->input(i)); }

bool OpContext::none(size_t i) const {
  const Val& v = in(i);
  return v.is(Kind::kConst) && v.value.isNone();
}

bool OpContext::fail(const std::string& why) {
  if (!failed_) t_.unsupported(n_, why);
  failed_ = true;
  return false;
}

std::optional<ir::ValueId> OpContext::tensor(size_t i) {
  const Val* v = activation(i);
  if (!v) return std::nullopt;
  if (v->view == Val::View::kNone) return v->id;
  fail(
      fmt::format("operand {} is {}, which zoc follows only into layer_norm, linear, "
                  "activations and back{}",
                  i + 1, view_name(v->view),
                  v->view == Val::View::kChannelsLast ? "" : " (ShuffleNet's channel shuffle)"));
  return std::nullopt;
}

const Val* OpContext::activation(size_t i) {
  const Val& v = in(i);
  if (v.is(Kind::kTensor)) return &v;
  fail(v.is(Kind::kParam) ? fmt::format("'{}' used as an activation", v.name)
                          : fmt::format("operand {} is not an activation", i + 1));
  return nullptr;
}

std::string view_name(Val::View view) {
  switch (view) {
    case Val::View::kNone:
      return "an activation";
    case Val::View::kChannelsLast:
      return "a channels-last [N, H, W, C] view of an image";
    case Val::View::kGrouped:
      return "a 5-D [N, g, C/g, H, W] view of an image";
    case Val::View::kGroupedTransposed:
      return "a 5-D [N, C/g, g, H, W] view of an image";
    case Val::View::kSequence:
      return "a [N, 1, F] view of features (ECA's x.view(n, 1, -1))";
  }
  return "?";
}

std::vector<int64_t> viewed_dims(const Val& v, const std::vector<int64_t>& d) {
  return frontend::viewed_dims(v.view, v.groups, d);
}

const Val* OpContext::param(size_t i) {
  const Val& v = in(i);
  if (v.is(Kind::kParam) && v.in_state_dict && v.stored_rank < 0) return &v;
  if (v.is(Kind::kParam) && v.in_state_dict) {
    fail(
        fmt::format("parameter '{}' is used reshaped; zoc takes a reshaped parameter only as "
                    "the per-channel operand of add, sub, mul or div",
                    v.name));
    return nullptr;
  }
  fail(v.is(Kind::kParam)
           ? fmt::format("tensor attribute '{}' is not a parameter or buffer, so it is not in the "
                         "state_dict that zoc's weights come from",
                         v.name)
           : fmt::format("operand {} is not a parameter of the module", i + 1));
  return nullptr;
}

std::optional<std::string> OpContext::layer_of(const Val& p, const char* suffix) {
  const std::string tail = std::string(".") + suffix;
  if (p.name.size() > tail.size() &&
      p.name.compare(p.name.size() - tail.size(), tail.size(), tail) == 0) {
    return p.name.substr(0, p.name.size() - tail.size());
  }
  fail(fmt::format("its {} is '{}'; zoc names a layer's tensors <layer>.weight, <layer>.bias, ...",
                   suffix, p.name));
  return std::nullopt;
}

std::optional<bool> OpContext::optional_param(size_t i, const std::string& layer,
                                              const char* suffix) {
  if (none(i)) return false;
  const Val* p = param(i);
  if (!p) return std::nullopt;
  if (p->name != layer + "." + suffix || p->transposed) {
    fail(fmt::format("'{}' is used where '{}.{}' was expected", p->name, layer, suffix));
    return std::nullopt;
  }
  return true;
}

std::optional<int64_t> OpContext::i(size_t i) {
  const Val& v = in(i);
  if (v.is(Kind::kConst) && v.value.isInt()) return v.value.toInt();
  fail(v.is(Kind::kBatch) ? "it uses the batch size, which zoc keeps dynamic"
                          : fmt::format("argument {} is not a constant integer", i + 1));
  return std::nullopt;
}

std::optional<double> OpContext::f(size_t i) {
  const Val& v = in(i);
  if (v.is(Kind::kConst) && v.value.isDouble()) return v.value.toDouble();
  if (v.is(Kind::kConst) && v.value.isInt()) return static_cast<double>(v.value.toInt());
  fail(fmt::format("argument {} is not a constant number", i + 1));
  return std::nullopt;
}

std::optional<bool> OpContext::b(size_t i) {
  const Val& v = in(i);
  if (v.is(Kind::kConst) && v.value.isBool()) return v.value.toBool();
  fail(fmt::format("argument {} is not a constant boolean", i + 1));
  return std::nullopt;
}

std::optional<std::string> OpContext::str(size_t i) {
  const Val& v = in(i);
  if (v.is(Kind::kConst) && v.value.isString()) return v.value.toStringRef();
  fail(fmt::format("argument {} is not a constant string", i + 1));
  return std::nullopt;
}

std::optional<std::vector<int64_t>> OpContext::ints(size_t i, bool allow_batch) {
  const Val& v = in(i);
  if (v.is(Kind::kConst) && v.value.isIntList()) return v.value.toIntVector();
  if (v.is(Kind::kConst) && v.value.isInt()) return std::vector<int64_t>{v.value.toInt()};
  if (v.is(Kind::kList)) {
    std::vector<int64_t> out;
    for (const Val& item : v.items) {
      if (item.is(Kind::kConst) && item.value.isInt()) {
        out.push_back(item.value.toInt());
      } else if (allow_batch && item.is(Kind::kBatch)) {
        out.push_back(kBatchDim);
      } else {
        fail(item.is(Kind::kBatch) ? "it uses the batch size, which zoc keeps dynamic"
                                   : fmt::format("argument {} is not a list of constants", i + 1));
        return std::nullopt;
      }
    }
    return out;
  }
  fail(fmt::format("argument {} is not a constant integer list", i + 1));
  return std::nullopt;
}

std::optional<ir::Pair> OpContext::pair(size_t i, const char* what) {
  auto v = ints(i);
  if (!v) return std::nullopt;
  if (v->size() == 1) return ir::Pair{(*v)[0], (*v)[0]};
  if (v->size() == 2) return ir::Pair{(*v)[0], (*v)[1]};
  fail(fmt::format("{} has {} values; zoc supports 2-D layers", what, v->size()));
  return std::nullopt;
}

const std::vector<int64_t>* OpContext::dims(ir::ValueId v) { return t_.dims(v); }

ir::Node& OpContext::producer(ir::ValueId v) {
  return t_.graph_.nodes[static_cast<size_t>(t_.graph_.values[v].producer)];
}

std::optional<ir::ValueId> OpContext::emit(ir::OpKind op, std::vector<ir::ValueId> inputs,
                                           ir::Attrs given, const std::string* layer) {
  const Origin o = t_.origin(n_);
  std::string name, weights_of;
  if (layer) {
    if (layer->empty()) {
      fail("its parameters have no layer name (a model that is one bare layer)");
      return std::nullopt;
    }
    name = *layer;
    if (t_.used_names_.count(*layer)) {  // a layer called again reads the same tensors
      const ir::Node* first = t_.graph_.find_node(*layer);
      if (!first || first->op != op) {
        fail(
            fmt::format("layer '{}' runs a second time as {}, after running as {}; zoc shares "
                        "a layer's weights only between calls of the same kind",
                        *layer, ir::op_info(op).name,
                        first ? ir::op_info(first->op).name : "another operation"));
        return std::nullopt;
      }
      name = t_.fresh_name(Origin{*layer, true, o.loc}, op);
      weights_of = *layer;
    }
  } else {
    name = t_.fresh_name(o, op);
  }
  // Attributes in op-table order, defaults written out, as the YAML frontend does.
  ir::Attrs attrs = ir::with_defaults(op, given);
  const int32_t index = t_.graph_.add_node(op, name, std::move(inputs), std::move(attrs), o.loc);
  t_.graph_.nodes[static_cast<size_t>(index)].weights_of = std::move(weights_of);
  t_.used_names_.insert(name);
  return t_.graph_.nodes[static_cast<size_t>(index)].output;
}

void OpContext::result(Val v, size_t output) { t_.set(n_->output(output), std::move(v)); }

}  // namespace zoc::torchscript::detail
