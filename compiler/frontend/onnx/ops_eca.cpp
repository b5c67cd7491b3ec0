// ECA attention (timm's EcaModule, issue 36) through ONNX, as both exporters write it:
//     ReduceMean(x, axes [2, 3], keepdims 0) -> Reshape [N, 1, -1] -> Conv (1-D kernel)
//     -> Sigmoid -> Reshape [N, -1, 1, 1] -> Expand (to Shape(x)) -> Mul(x, .)
// The [N, 1, C] tensor is a view of the pooled features (View::kSequence) with no IR node; the
// 1-D Conv on it is a channel_conv1d, whose result is viewed the same way; the Reshape back to
// [N, C, 1, 1] is a reshape. Expand is the broadcast the Mul reading it already does, so it maps
// only where every reader is a Mul by a tensor of the shape it expands to. Every other use of
// these ops goes to dense_handler (ops_dense.cpp, then the other tables).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "compiler/frontend/onnx/internal.h"

namespace zoc::onnx::detail {
namespace {

using Kind = Val::Kind;
using View = Val::View;

std::string list_str(const std::vector<int64_t>& v) {
  return fmt::format("[{}]", fmt::join(v, ", "));
}

bool next(NodeContext& c) {
  Handler h = dense_handler(c.node().op_type());
  return h ? h(c) : c.fail("no handler");
}

// Input i as a shape whose batch elements are kBatchDim; nullopt after a failure.
std::optional<std::vector<int64_t>> target_shape(NodeContext& c, size_t i) {
  const Val* s = c.shape_constant(i, "shape");
  if (!s) return std::nullopt;
  if (s->constant->floating) {
    c.fail("a float shape");
    return std::nullopt;
  }
  std::vector<int64_t> to = s->constant->i;
  for (size_t k = 0; k < s->constant->batch.size() && k < to.size(); ++k) {
    if (s->constant->batch[k]) to[k] = kBatchDim;
  }
  return to;
}

// Whether `v` in a target's first place stands for the batch.
bool batch_dim(NodeContext& c, int64_t v) {
  const std::optional<int64_t> batch = c.declared_batch();
  return v == kBatchDim || v == 0 || (batch && v == *batch);
}

// Reshape of features [N, F] to [N, 1, F] (or -1 for F), and of that view back to
// [N, F, 1, 1] (a reshape) or [N, F] (the features).
bool reshape(NodeContext& c) {
  const Val& in = c.in(0);
  if (!in.is(Kind::kActivation) || (in.view != View::kNone && in.view != View::kSequence) ||
      c.opset() < 5) {
    return next(c);
  }
  const std::vector<int64_t>* d = c.dims(in.id);
  if (!d || d->size() != 1) return d ? next(c) : false;
  const Val* probe = c.in(1).is(Kind::kConstant) ? &c.in(1) : nullptr;
  const size_t rank = probe ? probe->constant->numel() : 0;
  if (in.view == View::kNone && rank != 3) return next(c);
  auto to = target_shape(c, 1);
  if (!to) return false;
  const int64_t f = (*d)[0];
  const auto is_f = [&](size_t k) { return (*to)[k] == -1 || (*to)[k] == f; };
  const bool batch = batch_dim(c, (*to)[0]);
  const Val v = in;
  if (v.view == View::kNone) {
    if (!batch || (*to)[1] != 1 || !is_f(2)) return next(c);
    c.result(Val::activation(v.id, View::kSequence));
    return true;
  }
  if (batch && to->size() == 2 && is_f(1)) return c.result_activation(v.id);
  if (batch && to->size() == 4 && is_f(1) && (*to)[2] == 1 && (*to)[3] == 1) {
    ir::Attrs a;
    a.set("height", int_attr(1));
    a.set("width", int_attr(1));
    auto y = c.emit(ir::OpKind::Reshape, {v.id}, a);
    return y && c.result_activation(*y);
  }
  return c.fail(
      fmt::format("a reshape of {} [N, 1, {}] to {}; zoc reshapes it back to "
                  "[N, {}, 1, 1] or [N, {}]",
                  view_name(v.view), f, target_str(*to), f, f));
}

// One number of a 1-D Conv's attribute (`dflt` when absent); nullopt after a failure.
std::optional<int64_t> one_of(NodeContext& c, const char* name, int64_t dflt) {
  std::vector<int64_t> v{dflt};
  if (!c.attr(name, v)) return std::nullopt;
  if (v.size() != 1) {
    c.fail(fmt::format("a 1-D Conv with {} {}", name, list_str(v)));
    return std::nullopt;
  }
  return v[0];
}

// Conv(x, W [1, 1, k], B [1]) on the [N, 1, F] view: PyTorch's Conv1d(1, 1, k).
bool conv(NodeContext& c) {
  const Val& in = c.in(0);
  if (!in.is(Kind::kActivation) || in.view != View::kSequence) return next(c);
  const Val x = in;
  const Val* w = c.constant(1, "weight");
  const Val* b = w && c.has_input(2) ? c.constant(2, "bias") : nullptr;
  if (!w || (c.has_input(2) && !b)) return false;
  const std::vector<int64_t>& wd = w->constant->dims;
  int64_t group = 1;
  std::string auto_pad = "NOTSET";
  std::vector<int64_t> pads{0, 0};
  if (!c.attr("group", group) || !c.attr("auto_pad", auto_pad) || !c.attr("pads", pads)) {
    return false;
  }
  if (!w->constant->floating || wd.size() != 3 || wd[0] != 1 || wd[1] != 1 || group != 1 ||
      (b && (!b->constant->floating || b->constant->numel() != 1))) {
    return c.fail(
        fmt::format("a Conv with weight {} and group {} on {}; zoc maps a 1-D Conv "
                    "with one input and output channel there (ECA attention)",
                    list_str(wd), group, view_name(x.view)));
  }
  if (auto_pad != "NOTSET" || pads.size() != 2 || pads[0] != pads[1]) {
    return c.fail(
        fmt::format("a 1-D Conv with auto_pad {} and pads {}; zoc takes equal "
                    "explicit pads",
                    auto_pad, list_str(pads)));
  }
  auto kernel = one_of(c, "kernel_shape", wd[2]);
  auto stride = kernel ? one_of(c, "strides", 1) : std::nullopt;
  auto dilation = stride ? one_of(c, "dilations", 1) : std::nullopt;
  if (!dilation) return false;
  if (*kernel != wd[2]) return c.fail("kernel_shape differs from its weight's");
  ir::Attrs a;
  a.set("kernel", int_attr(wd[2]));
  a.set("stride", int_attr(*stride));
  a.set("padding", int_attr(pads[0]));
  a.set("dilation", int_attr(*dilation));
  a.set("bias", bool_attr(b != nullptr));
  std::vector<ParamBinding> params = {ParamBinding{"weight", w->constant, w->name, false}};
  if (b) {
    auto bias = std::make_shared<Constant>(*b->constant);
    bias->dims = {1};
    params.push_back(ParamBinding{"bias", std::move(bias), b->name, false});
  }
  auto y = c.emit(ir::OpKind::ChannelConv1d, {x.id}, a, std::move(params));
  return y && c.result_like(*y, x);
}

// Expand(x, shape): x itself where x broadcasts to the shape and each reader is a Mul by an
// activation of that shape (which broadcasts x itself).
bool expand(NodeContext& c) {
  auto x = c.activation(0);
  auto to = x ? target_shape(c, 1) : std::nullopt;
  const std::vector<int64_t>* d = to ? c.dims(*x) : nullptr;
  if (!d) return false;
  std::vector<int64_t> want(to->begin() + (to->empty() ? 0 : 1), to->end());
  bool broadcasts = !to->empty() && batch_dim(c, (*to)[0]) && want.size() == d->size();
  for (size_t k = 0; broadcasts && k < d->size(); ++k) {
    broadcasts = (*d)[k] == want[k] || (*d)[k] == 1;
  }
  const std::vector<const pb::NodeProto*> readers = c.readers_of_output();
  bool into_mul = !readers.empty();
  for (const pb::NodeProto* r : readers) {
    into_mul = into_mul && r && r->op_type() == "Mul" && r->input_size() == 2;
    if (!into_mul) break;
    const bool first = r->input(0) == c.node().output(0);
    const Val* o = c.value_now(r->input(first ? 1 : 0));
    const std::vector<int64_t>* od =
        o && o->is(Kind::kActivation) && o->view == View::kNone ? c.dims(o->id) : nullptr;
    into_mul = od && *od == want;
  }
  if (!broadcasts || !into_mul) {
    return c.fail(fmt::format(
        "an Expand of [N, {}] to {} {}; zoc maps Expand only into a Mul by "
        "a tensor of that shape (the Mul broadcasts)",
        fmt::join(*d, ", "), target_str(*to),
        broadcasts ? "read by something other than such a Mul" : "that is not a broadcast"));
  }
  return c.result_activation(*x);
}

const OpEntry kEcaOps[] = {
    {"Reshape", reshape},
    {"Conv", conv},
    {"Expand", expand},
};

}  // namespace

std::span<const OpEntry> eca_ops() { return kEcaOps; }

}  // namespace zoc::onnx::detail
