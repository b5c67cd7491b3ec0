// The op table, part two: ONNX's elementwise, shape and matrix ops to IR ops, and the ops that
// only move values (Identity, Constant).
//
// The IR knows two kinds of activation, images [N, C, H, W] and features [N, F], and a handful
// of ways between them; ONNX ops are general over ranks and axes. Each handler maps the forms
// CNN exporters write (Flatten at axis 1, Reshape to [N, -1], Gemm with transB, MatMul by an
// initializer followed by Add of the bias, Softmax over the features) and names what it does
// not. A constant added to a convolution's or linear layer's result becomes that layer's bias,
// which is how exporters write a bias the layer op itself does not carry. One entry per ONNX op
// type in kTensorOps at the end: the clipped-ReLU family and the other ops of the CNN zoo add a
// line there (and a handler) once the IR has them.
#include <cmath>
#include <limits>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "compiler/frontend/onnx/internal.h"

namespace zoc::onnx::detail {
namespace {

using Kind = Val::Kind;

std::string list_str(const std::vector<int64_t>& v) {
  return fmt::format("[{}]", fmt::join(v, ", "));
}

// An axis attribute of an op on a rank-`rank` tensor, made non-negative; nullopt if outside.
std::optional<int64_t> normalized_axis(NodeContext& c, int64_t axis, int64_t rank) {
  const int64_t a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= rank) {
    c.fail(fmt::format("axis {} of a rank-{} tensor", axis, rank));
    return std::nullopt;
  }
  return a;
}

// Elementwise activations follow views: a channels-last tensor's ReLU is the image's ReLU.
template <ir::OpKind Op>
bool unary(NodeContext& c) {
  const Val* x = c.viewed(0);
  if (!x) return false;
  const Val v = *x;
  auto y = c.emit(Op, {v.id}, {});
  return y && c.result_like(*y, v);
}

// Gelu (opset 20): PyTorch's GELU, the erf form (approximate "none") or the tanh approximation;
// it follows views like the other activations.
bool gelu(NodeContext& c) {
  const Val* x = c.viewed(0);
  std::string approximate = "none";
  if (!x || !c.attr("approximate", approximate)) return false;
  const Val v = *x;
  if (approximate != "none" && approximate != "tanh") {
    return c.fail(
        fmt::format("approximate '{}': ONNX defines 'none' and 'tanh'", shown_text(approximate)));
  }
  auto y = c.emit(approximate == "tanh" ? ir::OpKind::GeluTanh : ir::OpKind::Gelu, {v.id}, {});
  return y && c.result_like(*y, v);
}

// Clip(x, min, max): ReLU when it only clips below at 0, else hardtanh (ReLU6 is Clip(x, 0, 6)).
// Opset 11 moved min and max from attributes to inputs.
bool clip(NodeContext& c) {
  const Val* xv = c.viewed(0);
  if (!xv) return false;
  const Val x = *xv;
  double lo = -std::numeric_limits<double>::infinity(),
         hi = std::numeric_limits<double>::infinity();
  if (c.opset() < 11) {
    if (!c.attr("min", lo) || !c.attr("max", hi)) return false;
  } else {
    std::optional<double> l = lo, h = hi;
    if (c.has_input(1)) l = c.scalar(1, "min");
    if (c.has_input(2)) h = c.scalar(2, "max");
    if (!l || !h) return false;
    lo = *l;
    hi = *h;
  }
  // float32's largest value is what exporters write for "no upper bound".
  if (lo == 0 && hi >= std::numeric_limits<float>::max()) {
    auto y = c.emit(ir::OpKind::Relu, {x.id}, {});
    return y && c.result_like(*y, x);
  }
  const double kBound = std::numeric_limits<float>::max();
  if (!(lo > -kBound && hi < kBound && lo <= hi)) {
    return c.fail(
        fmt::format("clipping to [{:g}, {:g}]: zoc maps Clip as ReLU (min 0, no max) or "
                    "as hardtanh, which clips on both sides (min <= max, both finite)",
                    lo, hi));
  }
  ir::Attrs a;
  a.set("min_val", float_attr(decimal_of_float(static_cast<float>(lo))));
  a.set("max_val", float_attr(decimal_of_float(static_cast<float>(hi))));
  auto y = c.emit(ir::OpKind::Hardtanh, {x.id}, a);
  return y && c.result_like(*y, x);
}

// A constant `b` added to the result `x` of a convolution or linear layer without a bias, read
// by nothing else: it becomes the layer's bias if it is one value per output channel or
// feature. `legacy_axis`: opset < 7 Add's `axis` under broadcast=1.
bool add_bias(NodeContext& c, size_t xi, const Val& b, std::optional<int64_t> legacy_axis) {
  const Val xv = c.in(xi);
  const ir::ValueId x = xv.id;
  ir::Node& layer = c.producer(x);
  const std::vector<int64_t>& d = b.constant->dims;
  bool shape_ok = false;
  int64_t channels = 0;
  if (layer.op == ir::OpKind::Conv2d && xv.view == Val::View::kChannelsLast) {
    // A linear layer over each pixel's channels (pixel_linear): the bias broadcasts over C last.
    channels = layer.attrs.i("out_channels");
    shape_ok = d == std::vector<int64_t>{channels} || d == std::vector<int64_t>{1, 1, 1, channels};
  } else if (xv.view != Val::View::kNone) {
    shape_ok = false;
  } else if (layer.op == ir::OpKind::Conv2d) {
    channels = layer.attrs.i("out_channels");
    shape_ok = d == std::vector<int64_t>{channels, 1, 1} ||
               d == std::vector<int64_t>{1, channels, 1, 1} ||
               (legacy_axis == 1 && d == std::vector<int64_t>{channels});
  } else if (layer.op == ir::OpKind::Linear) {
    channels = layer.attrs.i("out_features");
    shape_ok = d == std::vector<int64_t>{channels} || d == std::vector<int64_t>{1, channels};
  }
  if (channels == 0 || layer.attrs.b("bias") || c.readers_of_input(xi) != 1 ||
      !b.constant->floating || !shape_ok) {
    return c.fail(
        fmt::format("adding constant '{}' of shape {} to a tensor computed from the "
                    "input: zoc adds a constant only as the bias of the convolution or "
                    "linear layer just before it",
                    shown_text(b.name), list_str(d)));
  }
  auto bias = std::make_shared<Constant>(*b.constant);
  bias->dims = {channels};
  layer.attrs.set("bias", bool_attr(true));
  c.params_of(layer).push_back(ParamBinding{"bias", std::move(bias), b.name, false});
  return c.result_like(x, xv);
}

bool add(NodeContext& c) {
  const Val &a = c.in(0), &b = c.in(1);
  std::optional<int64_t> legacy_axis;
  if (c.opset() < 7) {
    int64_t broadcast = 0, axis = -1;
    if (!c.attr("broadcast", broadcast) || !c.attr("axis", axis)) return false;
    if (broadcast) legacy_axis = axis;
  }
  if (a.is(Kind::kActivation) && b.is(Kind::kConstant)) return add_bias(c, 0, b, legacy_axis);
  if (b.is(Kind::kActivation) && a.is(Kind::kConstant)) return add_bias(c, 1, a, legacy_axis);
  auto p = c.activation_pair();
  if (!p) return false;
  if (p->da != p->db) {
    return c.fail(fmt::format("broadcasting [N, {}] + [N, {}]: zoc adds tensors of the same shape",
                              fmt::join(p->da, ", "), fmt::join(p->db, ", ")));
  }
  auto z = c.emit(ir::OpKind::Add, {p->a, p->b}, {});
  return z && c.result_activation(*z);
}

// [N, ...] -> [N, features], the only reshape the IR has.
bool to_features(NodeContext& c, ir::ValueId x, const std::vector<int64_t>& d) {
  if (d.size() == 1) return c.result_activation(x);
  auto y = c.emit(ir::OpKind::Flatten, {x}, {});
  return y && c.result_activation(*y);
}

bool flatten(NodeContext& c) {
  auto x = c.activation(0);
  const std::vector<int64_t>* d = x ? c.dims(*x) : nullptr;
  int64_t axis = 1;
  if (!d || !c.attr("axis", axis)) return false;
  const int64_t rank = static_cast<int64_t>(d->size()) + 1;
  const int64_t a = axis < 0 ? axis + rank : axis;
  if (a != 1) {
    return c.fail(
        fmt::format("Flatten at axis {} of a rank-{} tensor: zoc flattens [N, ...] to "
                    "[N, features] (axis 1)",
                    axis, rank));
  }
  return to_features(c, *x, *d);
}

// Reshape(x, shape) to [N, features]: shape [0 or -1 or the batch, -1 or F], or [-1, F]. Before
// opset 5 the shape was an attribute. A view, or a 5-D target, is ShuffleNet's channel shuffle
// (reshape_view, ops_zoo.cpp); the batch may come from a Shape (kBatchDim).
bool reshape(NodeContext& c) {
  auto x = c.in(0).is(Kind::kActivation) ? std::optional(c.in(0).id) : c.activation(0);
  std::vector<int64_t> to;
  bool floating = false;
  if (x && c.opset() < 5) {
    if (!c.attr("shape", to)) return false;
  } else if (const Val* s = x ? c.shape_constant(1, "shape") : nullptr) {
    to = s->constant->i;
    floating = s->constant->floating;
    for (size_t k = 0; k < s->constant->batch.size() && k < to.size(); ++k) {
      if (s->constant->batch[k]) to[k] = kBatchDim;
    }
  } else {
    return false;
  }
  if (!floating && to == std::vector<int64_t>{-1} && c.declared_batch()) {
    Partial p{Partial::Step::kFlattened, c.in(0)};  // as_strided's first step (ops_decomposed.cpp)
    return c.result_partial(std::move(p));
  }
  if (!floating && (c.in(0).view != Val::View::kNone || to.size() == 5)) return reshape_view(c, to);
  const std::vector<int64_t>* d = c.dims(*x);
  int64_t allowzero = 0;
  if (!d || !c.attr("allowzero", allowzero)) return false;
  int64_t features = 1;
  for (int64_t v : *d) features *= v;  // bounded by shape inference
  const std::optional<int64_t> batch = c.declared_batch();
  auto first_ok = [&](int64_t v) {
    return (v == 0 && !allowzero) || (batch && v == *batch) || v == -1 || v == kBatchDim;
  };
  auto second_ok = [&](int64_t v) {
    return v == features || v == -1 || (v == 0 && !allowzero && (*d)[0] == features);
  };
  if (floating || to.size() != 2 || !first_ok(to[0]) || !second_ok(to[1]) ||
      (to[0] == -1 && to[1] == -1)) {
    return c.fail(
        fmt::format("a reshape of [N, {}] to {}: zoc reshapes only to [N, features] "
                    "(shape [-1, {}] or [0, -1]) and, for ShuffleNet's channel "
                    "shuffle, an image to [N, g, C/g, H, W] and back",
                    fmt::join(*d, ", "), floating ? "a float shape" : target_str(to), features));
  }
  return to_features(c, *x, *d);
}

// Input i as a floating 2-D constant: a linear layer's weight.
const Val* matrix(NodeContext& c, size_t i) {
  const Val* w = c.constant(i, "weight");
  if (w && (!w->constant->floating || w->constant->dims.size() != 2)) {
    c.fail(fmt::format("its weight '{}' is not a floating-point matrix (shape {})",
                       shown_text(w->name), list_str(w->constant->dims)));
    return nullptr;
  }
  return w;
}

// Features [N, F] at input i.
std::optional<ir::ValueId> features(NodeContext& c, size_t i) {
  auto x = c.activation(i);
  const std::vector<int64_t>* d = x ? c.dims(*x) : nullptr;
  if (!d) return std::nullopt;
  if (d->size() != 1) {
    c.fail(
        fmt::format("a matrix product of [N, {}]; zoc's linear layers take features [N, F] "
                    "(flatten first)",
                    fmt::join(*d, ", ")));
    return std::nullopt;
  }
  return x;
}

// Gemm(A, B, C) = alpha * A' B' + beta * C as linear(A) with weight B (transB = 1) or B^T.
bool gemm(NodeContext& c) {
  auto x = features(c, 0);
  const Val* w = x ? matrix(c, 1) : nullptr;
  int64_t trans_a = 0, trans_b = 0;
  double alpha = 1, beta = 1;
  if (!w || !c.attr("transA", trans_a) || !c.attr("transB", trans_b) || !c.attr("alpha", alpha) ||
      !c.attr("beta", beta)) {
    return false;
  }
  if (trans_a) return c.fail("transA=1: zoc's linear layers take [N, features]");
  if (alpha != 1 || (c.has_input(2) && beta != 1)) {
    return c.fail(
        fmt::format("alpha={:g}, beta={:g}: zoc maps Gemm with alpha = beta = 1", alpha, beta));
  }
  const int64_t out = w->constant->dims[trans_b ? 0 : 1];
  std::vector<ParamBinding> params = {{"weight", w->constant, w->name, trans_b == 0}};
  if (c.has_input(2)) {
    const Val* b = c.constant(2, "bias");
    if (!b) return false;
    const std::vector<int64_t>& d = b->constant->dims;
    if (!b->constant->floating ||
        (d != std::vector<int64_t>{out} && d != std::vector<int64_t>{1, out})) {
      return c.fail(
          fmt::format("its C '{}' has shape {}: zoc's linear bias is one value per "
                      "output feature ([{}])",
                      shown_text(b->name), list_str(d), out));
    }
    auto bias = std::make_shared<Constant>(*b->constant);
    bias->dims = {out};
    params.push_back({"bias", std::move(bias), b->name, false});
  }
  ir::Attrs a;
  a.set("out_features", int_attr(out));
  a.set("bias", bool_attr(params.size() == 2));
  auto y = c.emit(ir::OpKind::Linear, {*x}, a, std::move(params));
  return y && c.result_activation(*y);
}

// MatMul(A, W) with W an [in, out] initializer: a linear layer without bias (a following Add
// of a constant joins it as the bias).
bool matmul(NodeContext& c) {
  if (c.in(0).is(Kind::kActivation) && c.in(0).view == Val::View::kChannelsLast) {
    const Val x = c.in(0);
    const Val* w = matrix(c, 1);
    return w && pixel_linear(c, x, *w);
  }
  auto x = features(c, 0);
  const Val* w = x ? matrix(c, 1) : nullptr;
  if (!w) return false;
  ir::Attrs a;
  a.set("out_features", int_attr(w->constant->dims[1]));
  a.set("bias", bool_attr(false));
  auto y = c.emit(ir::OpKind::Linear, {*x}, a, {{"weight", w->constant, w->name, true}});
  return y && c.result_activation(*y);
}

// Softmax over the features of [N, F]: axis 1 or -1 in every opset.
bool softmax(NodeContext& c) {
  auto x = c.activation(0);
  const std::vector<int64_t>* d = x ? c.dims(*x) : nullptr;
  int64_t axis = c.opset() < 13 ? 1 : -1;
  if (!d || !c.attr("axis", axis)) return false;
  const auto a = normalized_axis(c, axis, static_cast<int64_t>(d->size()) + 1);
  if (!a) return false;
  if (d->size() != 1 || *a != 1) {
    return c.fail(
        fmt::format("softmax at axis {} of [N, {}]: zoc's softmax runs over the "
                    "features of [N, F]",
                    axis, fmt::join(*d, ", ")));
  }
  auto y = c.emit(ir::OpKind::Softmax, {*x}, {});
  return y && c.result_activation(*y);
}

// Dropout: the identity at inference. Opset 12 moved ratio and training_mode to inputs; opset 6
// ran in training mode unless is_test was set.
bool dropout(NodeContext& c) {
  auto x = c.activation(0);
  if (!x) return false;
  double ratio = 0.5;
  int64_t is_test = 0;
  if (!c.attr("ratio", ratio) || !c.attr("is_test", is_test)) return false;
  if (c.opset() >= 12 && c.has_input(1)) {
    auto r = c.scalar(1, "ratio");
    if (!r) return false;
    ratio = decimal_of_float(static_cast<float>(*r));
  }
  if (c.opset() >= 12 && c.has_input(2)) {
    auto training = c.scalar(2, "training_mode");
    if (!training) return false;
    if (*training != 0) return c.fail("training_mode is true (random masks): export in eval mode");
  }
  if (c.opset() < 7 && !is_test) return c.fail("is_test=0: dropout in training mode");
  if (c.output_used(1)) return c.fail("its mask output is used");
  ir::Attrs a;
  a.set("p", float_attr(ratio));
  auto y = c.emit(ir::OpKind::Dropout, {*x}, a);
  return y && c.result_activation(*y);
}

bool concat(NodeContext& c) {
  std::vector<ir::ValueId> inputs;
  for (size_t i = 0; i < static_cast<size_t>(c.node().input_size()); ++i) {
    auto x = c.activation(i);
    if (!x) return false;
    inputs.push_back(*x);
  }
  const std::vector<int64_t>* d = inputs.empty() ? nullptr : c.dims(inputs[0]);
  int64_t axis = 1;  // opsets 1 to 3 default to the channels; later ones require the attribute
  if (!d || !c.attr("axis", axis)) return false;
  const auto a = normalized_axis(c, axis, static_cast<int64_t>(d->size()) + 1);
  if (!a) return false;
  if (d->size() != 3 || *a != 1) {
    return c.fail(
        fmt::format("concatenation at axis {} of [N, {}]: zoc concatenates images "
                    "along channels",
                    axis, fmt::join(*d, ", ")));
  }
  auto y = c.emit(ir::OpKind::Concat, std::move(inputs), {});
  return y && c.result_activation(*y);
}

// Identity passes its input on, activation or constant (torch.onnx.export writes Identity
// nodes that give a deduplicated initializer each of its state_dict names).
bool identity(NodeContext& c) {
  const Val& v = c.in(0);
  if (!v.is(Kind::kActivation) && !v.is(Kind::kConstant))
    return c.fail("its input is not a tensor");
  c.result(v);
  return true;
}

// Constant: its value as a tensor, or (opset 12 on) as a number or a list of them.
bool constant(NodeContext& c) {
  auto out = std::make_shared<Constant>();
  for (const pb::AttributeProto& a : c.node().attribute()) {
    if (a.name() == "value" && a.type() == pb::AttributeProto::TENSOR) {
      auto v = decode_tensor(a.t());
      if (!v) return c.fail(fmt::format("its value: {}", v.error().message));
      *out = std::move(*v);
    } else if (a.name() == "value_float" || a.name() == "value_floats") {
      out->f = a.name() == "value_float" ? std::vector<float>{a.f()}
                                         : std::vector<float>(a.floats().begin(), a.floats().end());
      if (a.name() == "value_floats") out->dims = {static_cast<int64_t>(out->f.size())};
    } else if (a.name() == "value_int" || a.name() == "value_ints") {
      out->floating = false;
      out->i = a.name() == "value_int" ? std::vector<int64_t>{a.i()}
                                       : std::vector<int64_t>(a.ints().begin(), a.ints().end());
      if (a.name() == "value_ints") out->dims = {static_cast<int64_t>(out->i.size())};
    } else {
      return c.fail(fmt::format("a constant given as '{}'", shown_text(a.name())));
    }
  }
  out->name = c.node().output_size() > 0 ? c.node().output(0) : "";
  c.result(Val::known(std::move(out)));
  return true;
}

const OpEntry kTensorOps[] = {
    {"Relu", unary<ir::OpKind::Relu>},
    {"Sigmoid", unary<ir::OpKind::Sigmoid>},
    {"Tanh", unary<ir::OpKind::Tanh>},
    {"HardSwish", unary<ir::OpKind::Hardswish>},
    {"Gelu", gelu},
    {"Clip", clip},
    {"Add", add},
    {"Flatten", flatten},
    {"Reshape", reshape},
    {"Gemm", gemm},
    {"MatMul", matmul},
    {"Softmax", softmax},
    {"Dropout", dropout},
    {"Concat", concat},
    {"Identity", identity},
    {"Constant", constant},
};

}  // namespace

std::span<const OpEntry> tensor_ops() { return kTensorOps; }

}  // namespace zoc::onnx::detail
