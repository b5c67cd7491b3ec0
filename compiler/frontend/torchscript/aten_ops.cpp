// ATen ops to IR ops: one handler per op family, each reading the arguments TorchScript passes
// (after constant folding) through OpContext's typed readers and checking what the IR cannot
// express before emitting a node.
//
// Argument positions are the ATen schemas' (native_functions.yaml), which scripting and
// tracing both use: scripted torchvision code calls aten::conv2d, traced code the lower
// aten::_convolution. A layer with parameters is named after the owner of its weight
// ("<layer>.weight"), and its other tensors must be that layer's (`<layer>.bias`, ...), because
// the IR derives every parameter name from the node name.
#include <fmt/format.h>

#include "compiler/frontend/torchscript/internal.h"

namespace zoc::torchscript::detail {

using Kind = Val::Kind;

ir::AttrValue int_attr(int64_t v) { return ir::AttrValue{ir::AttrKind::Int, v, {}, 0}; }
ir::AttrValue bool_attr(bool v) { return ir::AttrValue{ir::AttrKind::Bool, v ? 1 : 0, {}, 0}; }
ir::AttrValue float_attr(double v) { return ir::AttrValue{ir::AttrKind::Float, 0, {}, v}; }
ir::AttrValue pair_attr(ir::Pair p) { return ir::AttrValue{ir::AttrKind::Pair, 0, p, 0}; }

namespace {

constexpr size_t kNone = static_cast<size_t>(-1);
constexpr int64_t kMaxAdaptiveSize = 1 << 12;  // adaptive_avgpool2d's output_size (ops.def)

// Where the arguments of a convolution are; the three spellings differ after `dilation`.
struct ConvArgs {
  size_t transposed = kNone, groups = 6;
};

bool convolution(OpContext& c, ConvArgs args) {
  auto x = c.tensor(0);
  const Val* w = x ? c.param(1) : nullptr;
  if (!w) return false;
  if (w->tensor.dim() != 4 || w->transposed) {
    return c.fail(
        fmt::format("a {}-D convolution; zoc supports 2-D convolutions", w->tensor.dim() - 2));
  }
  auto layer = c.layer_of(*w, "weight");
  if (!layer) return false;
  auto bias = c.optional_param(2, *layer, "bias");
  auto stride = c.pair(3, "stride");
  auto dilation = c.pair(5, "dilation");
  auto groups = c.i(args.groups);
  if (!bias || !stride || !dilation || !groups) return false;
  if (args.transposed != kNone) {
    auto transposed = c.b(args.transposed);
    if (!transposed) return false;
    if (*transposed) return c.fail("transposed convolution");
  }
  const int64_t kh = w->tensor.size(2), kw = w->tensor.size(3);
  ir::Pair padding;
  if (c.in(4).is(Kind::kConst) && c.in(4).value.isString()) {  // conv2d(padding='same'|'valid')
    const std::string mode = c.in(4).value.toStringRef();
    const int64_t th = dilation->h * (kh - 1), tw = dilation->w * (kw - 1);
    if (mode == "valid") {
      padding = {0, 0};
    } else if (mode == "same" && th % 2 == 0 && tw % 2 == 0) {
      padding = {th / 2, tw / 2};
    } else {
      return c.fail(fmt::format("padding='{}' that pads unevenly", mode));
    }
  } else {
    auto p = c.pair(4, "padding");
    if (!p) return false;
    padding = *p;
  }
  ir::Attrs a;
  a.set("out_channels", int_attr(w->tensor.size(0)));
  a.set("kernel", pair_attr({kh, kw}));
  a.set("stride", pair_attr(*stride));
  a.set("padding", pair_attr(padding));
  a.set("dilation", pair_attr(*dilation));
  a.set("groups", int_attr(*groups));
  a.set("bias", bool_attr(*bias));
  auto y = c.emit(ir::OpKind::Conv2d, {*x}, a, &*layer);
  return y && c.result_tensor(*y);
}

bool conv2d(OpContext& c) { return convolution(c, {kNone, 6}); }
// aten::_convolution and aten::convolution: (..., dilation, transposed, output_padding, groups)
bool convolution_general(OpContext& c) { return convolution(c, {6, 8}); }

// aten::batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps, ...)
bool batch_norm(OpContext& c) {
  auto x = c.tensor(0);
  if (!x) return false;
  if (c.none(1) || c.none(3)) {
    return c.fail("BatchNorm without affine parameters or running statistics");
  }
  const Val* w = c.param(1);
  auto layer = w ? c.layer_of(*w, "weight") : std::nullopt;
  if (!layer) return false;
  for (auto [i, suffix] :
       {std::pair<size_t, const char*>{2, "bias"}, {3, "running_mean"}, {4, "running_var"}}) {
    auto has = c.optional_param(i, *layer, suffix);
    if (!has) return false;
    if (!*has) return c.fail("BatchNorm without a bias");
  }
  auto training = c.b(5);
  auto eps = c.f(7);
  if (!training || !eps) return false;
  if (*training) return c.fail("batch statistics (training mode): call model.eval() before saving");
  ir::Attrs a;
  a.set("eps", float_attr(*eps));
  if (c.in(6).is(Kind::kConst) && c.in(6).value.isDouble()) {
    a.set("momentum", float_attr(c.in(6).value.toDouble()));
  }
  auto y = c.emit(ir::OpKind::BatchNorm2d, {*x}, a, &*layer);
  return y && c.result_tensor(*y);
}

// Elementwise activations follow views: a channels-last tensor's GELU is the image's GELU.
template <ir::OpKind Op>
bool unary(OpContext& c) {
  const Val* x = c.activation(0);
  if (!x) return false;
  const Val v = *x;
  auto y = c.emit(Op, {v.id}, {});
  return y && c.result_like(*y, v);
}

// aten::hardtanh(self, min_val, max_val), and relu6(self) = hardtanh(self, 0, 6).
bool hardtanh(OpContext& c) {
  const Val* x = c.activation(0);
  std::optional<double> lo = 0.0, hi = 6.0;
  if (c.num_inputs() >= 3) lo = c.f(1), hi = c.f(2);
  if (!x || !lo || !hi) return false;
  const Val v = *x;
  if (*lo > *hi) return c.fail(fmt::format("hardtanh with min_val {} above max_val {}", *lo, *hi));
  ir::Attrs a;
  a.set("min_val", float_attr(*lo));
  a.set("max_val", float_attr(*hi));
  auto y = c.emit(ir::OpKind::Hardtanh, {v.id}, a);
  return y && c.result_like(*y, v);
}

// aten::gelu(self, approximate='none'|'tanh').
bool gelu(OpContext& c) {
  const Val* x = c.activation(0);
  if (!x) return false;
  const Val v = *x;
  std::string approximate = "none";
  if (c.num_inputs() > 1) {
    auto given = c.str(1);
    if (!given) return false;
    approximate = *given;
  }
  if (approximate != "none" && approximate != "tanh") {
    return c.fail(fmt::format("gelu with approximate='{}'", approximate));
  }
  auto y = c.emit(approximate == "tanh" ? ir::OpKind::GeluTanh : ir::OpKind::Gelu, {v.id}, {});
  return y && c.result_like(*y, v);
}

// contiguous, detach, clone: the same tensor, viewed as it was.
bool identity(OpContext& c) {
  const Val* x = c.activation(0);
  if (!x) return false;
  Val v = *x;
  c.result(std::move(v));
  return true;
}

// y = x W^T with the bias added next (x.matmul(w.t()) + b): the bias joins the linear layer if
// nothing else reads the product, which is so only where the matmul is in the same code and
// its result has no other use (no other name, no call that could keep it).
bool add_bias(OpContext& c, size_t activation, const Val& bias) {
  const ir::ValueId x = c.in(activation).id;
  ir::Node& lin = c.producer(x);
  const c10::Symbol from = c.node()->input(activation)->node()->kind();
  const bool product =
      from == c10::aten::matmul || from == c10::aten::mm || from == c10::aten::linear;
  if (lin.op != ir::OpKind::Linear || lin.attrs.b("bias") ||
      bias.name != ir::weights_owner(lin) + ".bias" || c.uses_of_input(activation) != 1 ||
      !product || c.in(activation).derived || c.in(activation).view != Val::View::kNone) {
    return c.fail(fmt::format("adding parameter '{}' to an activation", bias.name));
  }
  lin.attrs.set("bias", bool_attr(true));
  return c.result_tensor(x);
}

// aten::add(self, other, alpha)
bool add(OpContext& c) {
  if (c.num_inputs() > 2) {
    auto alpha = c.f(2);
    if (!alpha) return false;
    if (*alpha != 1.0) return c.fail(fmt::format("alpha={:g}", *alpha));
  }
  const Val &a = c.in(0), &b = c.in(1);
  if (a.is(Kind::kTensor) && b.is(Kind::kParam)) return add_bias(c, 0, b);
  if (b.is(Kind::kTensor) && a.is(Kind::kParam)) return add_bias(c, 1, a);
  if (!a.is(Kind::kTensor) || !b.is(Kind::kTensor)) {
    return c.fail("adding a constant; zoc adds two activations of the same shape");
  }
  if (a.view != b.view || a.groups != b.groups) {
    return c.fail(fmt::format("adding {} to {}", view_name(b.view), view_name(a.view)));
  }
  const Val va = a;
  auto y = c.emit(ir::OpKind::Add, {a.id, b.id}, {});
  return y && c.result_like(*y, va);  // elementwise: a view's sum is the images' sum, viewed
}

// aten::max_pool2d(self, kernel_size, stride, padding, dilation, ceil_mode)
bool max_pool2d(OpContext& c) {
  auto x = c.tensor(0);
  auto kernel = c.pair(1, "kernel_size");
  auto stride = c.ints(2);
  auto padding = c.pair(3, "padding");
  auto dilation = c.pair(4, "dilation");
  auto ceil = c.b(5);
  if (!x || !kernel || !stride || !padding || !dilation || !ceil) return false;
  ir::Attrs a;
  a.set("kernel", pair_attr(*kernel));
  if (!stride->empty()) {  // [] means "the kernel size"
    auto s = c.pair(2, "stride");
    if (!s) return false;
    a.set("stride", pair_attr(*s));
  }
  a.set("padding", pair_attr(*padding));
  a.set("dilation", pair_attr(*dilation));
  a.set("ceil_mode", bool_attr(*ceil));
  auto y = c.emit(ir::OpKind::MaxPool2d, {*x}, a);
  return y && c.result_tensor(*y);
}

// aten::avg_pool2d(self, kernel_size, stride, padding, ceil_mode, count_include_pad,
//                  divisor_override)
bool avg_pool2d(OpContext& c) {
  auto x = c.tensor(0);
  auto kernel = c.pair(1, "kernel_size");
  auto stride = c.ints(2);
  auto padding = c.pair(3, "padding");
  auto ceil = c.b(4);
  auto include_pad = c.b(5);
  if (!x || !kernel || !stride || !padding || !ceil || !include_pad) return false;
  if (c.num_inputs() > 6 && !c.none(6)) return c.fail("divisor_override");
  ir::Attrs a;
  a.set("kernel", pair_attr(*kernel));
  if (!stride->empty()) {
    auto s = c.pair(2, "stride");
    if (!s) return false;
    a.set("stride", pair_attr(*s));
  }
  a.set("padding", pair_attr(*padding));
  a.set("ceil_mode", bool_attr(*ceil));
  a.set("count_include_pad", bool_attr(*include_pad));
  auto y = c.emit(ir::OpKind::AvgPool2d, {*x}, a);
  return y && c.result_tensor(*y);
}

// The image and output size of an adaptive pool (self, output_size, ...).
struct AdaptiveInput {
  ir::ValueId x;
  ir::Pair out;
  int64_t h, w;  // the input's
};
std::optional<AdaptiveInput> adaptive_input(OpContext& c) {
  auto x = c.tensor(0);
  auto out = x ? c.pair(1, "output_size") : std::nullopt;
  const std::vector<int64_t>* d = out ? c.dims(*x) : nullptr;
  if (!d) return std::nullopt;
  if (d->size() != 3) {
    c.fail("input is not an image [N, C, H, W]");
    return std::nullopt;
  }
  return AdaptiveInput{*x, *out, (*d)[1], (*d)[2]};
}

// aten::adaptive_avg_pool2d(self, output_size): global pooling for 1x1, an ordinary average
// pool where the output size divides the input, else adaptive_avgpool2d (AlexNet's 6x6 and VGG's
// 7x7 classifier input from a smaller map).
bool adaptive_avg_pool2d(OpContext& c) {
  auto in = adaptive_input(c);
  if (!in) return false;
  const ir::ValueId* x = &in->x;
  const ir::Pair* out = &in->out;
  const int64_t h = in->h, w = in->w;
  if (out->h == 1 && out->w == 1) {
    auto y = c.emit(ir::OpKind::GlobalAvgPool, {*x}, {});
    return y && c.result_tensor(*y);
  }
  if (out->h == h && out->w == w) return c.result_tensor(*x);
  if (out->h < 1 || out->w < 1 || out->h > kMaxAdaptiveSize || out->w > kMaxAdaptiveSize) {
    return c.fail(
        fmt::format("output size {}x{} is outside 1..{}", out->h, out->w, kMaxAdaptiveSize));
  }
  ir::Attrs a;
  if (h % out->h != 0 || w % out->w != 0) {
    a.set("output_size", pair_attr(*out));
    auto y = c.emit(ir::OpKind::AdaptiveAvgPool2d, {*x}, a);
    return y && c.result_tensor(*y);
  }
  a.set("kernel", pair_attr({h / out->h, w / out->w}));
  a.set("stride", pair_attr({h / out->h, w / out->w}));
  auto y = c.emit(ir::OpKind::AvgPool2d, {*x}, a);
  return y && c.result_tensor(*y);
}

// aten::adaptive_max_pool2d(self, output_size) -> (values, indices), as torch.onnx maps it: a
// max pool with kernel = stride = input / output where the output size divides the input (a
// global one for 1x1); the IR has no adaptive max pool for other sizes. Only the values are
// computed: the indices are a value no op may read (Val::Kind::kUnavailable).
bool adaptive_max_pool2d(OpContext& c) {
  auto in = adaptive_input(c);
  if (!in) return false;
  const ir::ValueId* x = &in->x;
  const ir::Pair* out = &in->out;
  const int64_t h = in->h, w = in->w;
  if (out->h < 1 || out->w < 1 || h % out->h != 0 || w % out->w != 0) {
    return c.fail(
        fmt::format("output size {}x{} does not divide the {}x{} input; zoc maps "
                    "adaptive max pooling only where it is a max pool with kernel = "
                    "stride = input / output",
                    out->h, out->w, h, w));
  }
  ir::Attrs a;
  a.set("kernel", pair_attr({h / out->h, w / out->w}));
  a.set("stride", pair_attr({h / out->h, w / out->w}));
  auto y = c.emit(ir::OpKind::MaxPool2d, {*x}, a);
  if (!y) return false;
  if (c.node()->outputs().size() > 1) {
    Val indices;
    indices.kind = Kind::kUnavailable;
    indices.name = "the indices of adaptive_max_pool2d (return_indices=True)";
    c.result(std::move(indices), 1);
  }
  return c.result_tensor(*y);
}

// [N, ...] -> [N, features], the only reshape the IR has.
bool to_features(OpContext& c, ir::ValueId x, const std::vector<int64_t>& d) {
  if (d.size() == 1) return c.result_tensor(x);
  auto y = c.emit(ir::OpKind::Flatten, {x}, {});
  return y && c.result_tensor(*y);
}

// aten::flatten(self, start_dim, end_dim)
bool flatten(OpContext& c) {
  auto x = c.tensor(0);
  auto start = c.i(1);
  auto end = c.i(2);
  const std::vector<int64_t>* d = x && start && end ? c.dims(*x) : nullptr;
  if (!d) return false;
  const int64_t rank = static_cast<int64_t>(d->size()) + 1;
  const int64_t s = *start < 0 ? *start + rank : *start, e = *end < 0 ? *end + rank : *end;
  if (s == e) return c.result_tensor(*x);
  if (s != 1 || e != rank - 1) {
    return c.fail(
        fmt::format("flatten({}, {}) of a rank-{} tensor; zoc flattens [N, ...] to "
                    "[N, features]",
                    *start, *end, rank));
  }
  return to_features(c, *x, *d);
}

// aten::view / aten::reshape(self, shape): x.view(x.size(0), -1) and its spellings.
bool view(OpContext& c) {
  const Val* x = c.activation(0);
  auto shape = x ? c.ints(1, /*allow_batch=*/true) : std::nullopt;
  if (!shape) return false;
  if (x->view != Val::View::kNone || shape->size() == 5) {
    const Val v = *x;
    return view_activation(c, v, *shape);
  }
  const std::vector<int64_t>* d = c.dims(x->id);
  if (!d) return false;
  int64_t features = 1;
  for (int64_t v : *d) features *= v;
  const bool flat =
      shape->size() == 2 &&
      (((*shape)[0] == OpContext::kBatchDim && ((*shape)[1] == -1 || (*shape)[1] == features)) ||
       ((*shape)[0] == -1 && (*shape)[1] == features));
  if (!flat) return c.fail("a reshape that is not a flatten to [N, features]");
  return to_features(c, x->id, *d);
}

bool linear_layer(OpContext& c, ir::ValueId x, const Val& w, size_t bias_at, bool transposed) {
  if (w.tensor.dim() != 2 || w.transposed != transposed) {
    return c.fail(fmt::format("'{}' is not used as a linear layer's [out, in] weight", w.name));
  }
  auto layer = c.layer_of(w, "weight");
  if (!layer) return false;
  std::optional<bool> bias = false;
  if (bias_at != kNone) bias = c.optional_param(bias_at, *layer, "bias");
  if (!bias) return false;
  ir::Attrs a;
  a.set("out_features", int_attr(w.tensor.size(0)));
  a.set("bias", bool_attr(*bias));
  auto y = c.emit(ir::OpKind::Linear, {x}, a, &*layer);
  return y && c.result_tensor(*y);
}

// aten::linear(input, weight, bias)
bool linear(OpContext& c) {
  const Val* x = c.activation(0);
  const Val* w = x ? c.param(1) : nullptr;
  if (!w) return false;
  if (x->view == Val::View::kChannelsLast) return pixel_linear(c, *x, *w);
  auto plain = c.tensor(0);  // fails for other views
  return plain && linear_layer(c, *plain, *w, 2, false);
}

// aten::addmm(bias, input, weight.t(), beta, alpha): what older tracers recorded for nn.Linear.
bool addmm(OpContext& c) {
  auto beta = c.f(3);
  auto alpha = c.f(4);
  auto x = c.tensor(1);
  const Val* w = x && beta && alpha ? c.param(2) : nullptr;
  if (!w) return false;
  if (*beta != 1.0 || *alpha != 1.0) return c.fail("beta or alpha other than 1");
  if (c.none(0)) return c.fail("no bias");
  return linear_layer(c, *x, *w, 0, true);
}

// aten::matmul / aten::mm(input, weight.t()); a following add of `<layer>.bias` joins it.
bool matmul(OpContext& c) {
  auto x = c.tensor(0);
  const Val* w = x ? c.param(1) : nullptr;
  return w && linear_layer(c, *x, *w, kNone, true);
}

// aten::t, aten::transpose(self, 0, 1), aten::permute(self, [1, 0]) of a 2-D parameter; of an
// activation, the views of aten_zoo_ops.cpp.
bool transpose(OpContext& c) {
  if (c.in(0).is(Kind::kTensor)) {
    return c.node()->kind() == c10::aten::permute ? permute_activation(c) : transpose_activation(c);
  }
  const Val* p = c.param(0);
  if (!p) return false;
  if (p->tensor.dim() != 2) return c.fail("transposing a parameter that is not 2-D");
  if (c.node()->kind() == c10::aten::transpose || c.node()->kind() == c10::aten::permute) {
    auto dims = c.ints(1);
    if (c.node()->kind() == c10::aten::transpose) {
      auto d1 = c.i(2);
      if (!dims || !d1) return false;
      dims->push_back(*d1);
    }
    if (!dims || dims->size() != 2 || (*dims)[0] == (*dims)[1] ||
        ((*dims)[0] % 2 + 2) % 2 == ((*dims)[1] % 2 + 2) % 2) {
      return c.fail("a permutation of a 2-D parameter other than swapping its dimensions");
    }
    if (c.node()->kind() == c10::aten::permute && ((*dims)[0] == 0 || (*dims)[0] == -2)) {
      c.result(*p);  // the identity permutation
      return true;
    }
  }
  Val t = *p;
  t.transposed = !t.transposed;
  c.result(std::move(t));
  return true;
}

// aten::dropout(input, p, train) and its variants: the identity at inference.
bool dropout(OpContext& c) {
  auto x = c.tensor(0);
  auto p = c.f(1);
  auto train = c.b(2);
  if (!x || !p || !train) return false;
  if (*train) return c.fail("dropout in training mode: call model.eval() before saving");
  ir::Attrs a;
  a.set("p", float_attr(*p));
  auto y = c.emit(ir::OpKind::Dropout, {*x}, a);
  return y && c.result_tensor(*y);
}

// aten::softmax(self, dim, dtype) over the features of [N, F].
bool softmax(OpContext& c) {
  auto x = c.tensor(0);
  auto dim = c.i(1);
  const std::vector<int64_t>* d = x && dim ? c.dims(*x) : nullptr;
  if (!d) return false;
  if (c.num_inputs() > 2 && !c.none(2)) return c.fail("a dtype argument");
  if (d->size() != 1 || (*dim != 1 && *dim != -1)) {
    return c.fail("softmax other than over the features of [N, F]");
  }
  auto y = c.emit(ir::OpKind::Softmax, {*x}, {});
  return y && c.result_tensor(*y);
}

// aten::cat(tensors, dim) along the channels of images.
bool cat(OpContext& c) {
  const Val& list = c.in(0);
  auto dim = c.i(1);
  if (!dim) return false;
  if (!list.is(Kind::kList) || list.items.empty()) return c.fail("not a list of activations");
  std::vector<ir::ValueId> inputs;
  for (const Val& item : list.items) {
    if (!item.is(Kind::kTensor)) return c.fail("a list that holds more than activations");
    inputs.push_back(item.id);
  }
  const std::vector<int64_t>* d = c.dims(inputs[0]);
  if (!d) return false;
  if (d->size() != 3 || (*dim != 1 && *dim != -3)) {
    return c.fail("concatenation other than along the channels of [N, C, H, W]");
  }
  auto y = c.emit(ir::OpKind::Concat, std::move(inputs), {});
  return y && c.result_tensor(*y);
}

const std::map<std::string, Handler>& handlers() {
  static const std::map<std::string, Handler> table = {
      {"aten::conv2d", conv2d},
      {"aten::_convolution_mode", conv2d},  // traced conv2d(padding='same'|'valid')
      {"aten::_convolution", convolution_general},
      {"aten::convolution", convolution_general},
      {"aten::batch_norm", batch_norm},
      {"aten::relu", unary<ir::OpKind::Relu>},
      {"aten::relu_", unary<ir::OpKind::Relu>},
      {"aten::tanh", unary<ir::OpKind::Tanh>},
      {"aten::tanh_", unary<ir::OpKind::Tanh>},
      {"aten::sigmoid", unary<ir::OpKind::Sigmoid>},
      {"aten::sigmoid_", unary<ir::OpKind::Sigmoid>},
      {"aten::silu", unary<ir::OpKind::Silu>},
      {"aten::silu_", unary<ir::OpKind::Silu>},
      {"aten::hardtanh", hardtanh},
      {"aten::hardtanh_", hardtanh},
      {"aten::relu6", hardtanh},
      {"aten::relu6_", hardtanh},
      {"aten::hardswish", unary<ir::OpKind::Hardswish>},
      {"aten::hardswish_", unary<ir::OpKind::Hardswish>},
      {"aten::hardsigmoid", unary<ir::OpKind::Hardsigmoid>},
      {"aten::hardsigmoid_", unary<ir::OpKind::Hardsigmoid>},
      {"aten::gelu", gelu},
      {"aten::add", add},
      {"aten::add_", add},
      {"aten::max_pool2d", max_pool2d},
      {"aten::avg_pool2d", avg_pool2d},
      {"aten::adaptive_avg_pool2d", adaptive_avg_pool2d},
      {"aten::adaptive_max_pool2d", adaptive_max_pool2d},
      {"aten::flatten", flatten},
      {"aten::view", view},
      {"aten::reshape", view},
      {"aten::linear", linear},
      {"aten::addmm", addmm},
      {"aten::matmul", matmul},
      {"aten::mm", matmul},
      {"aten::t", transpose},
      {"aten::transpose", transpose},
      {"aten::permute", transpose},
      {"aten::dropout", dropout},
      {"aten::dropout_", dropout},
      {"aten::feature_dropout", dropout},
      {"aten::feature_dropout_", dropout},
      {"aten::alpha_dropout", dropout},
      {"aten::feature_alpha_dropout", dropout},
      {"aten::softmax", softmax},
      {"aten::cat", cat},
      {"aten::contiguous", identity},
      {"aten::detach", identity},
      {"aten::clone", identity},
  };
  return table;
}

}  // namespace

Handler find_handler(c10::Symbol kind) {
  const auto& radix = radix_handlers();
  if (auto it = radix.find(kind.toQualString()); it != radix.end()) return it->second;
  return eca_handler(kind);
}

Handler eca_handler(c10::Symbol kind) {
  const auto& eca = eca_handlers();
  if (auto it = eca.find(kind.toQualString()); it != eca.end()) return it->second;
  return dense_handler(kind);
}

Handler dense_handler(c10::Symbol kind) {
  const auto& dense = dense_handlers();
  if (auto it = dense.find(kind.toQualString()); it != dense.end()) return it->second;
  return base_handler(kind);
}

Handler base_handler(c10::Symbol kind) {
  const std::string name = kind.toQualString();
  for (const auto* table : {&handlers(), &zoo_handlers()}) {
    if (auto it = table->find(name); it != table->end()) return it->second;
  }
  return nullptr;
}

const char* mapped_ops_summary() {
  return "convolution, batch_norm, relu, add, max/avg and adaptive average/max pooling, flatten "
         "and view/reshape to [N, features], linear/addmm/matmul, dropout, softmax, cat, the "
         "activations tanh, sigmoid, silu, hardtanh/relu6, hardswish, hardsigmoid and gelu, mul "
         "(same shape, per channel, by a layer_scale parameter), mean over H and W, chunk along "
         "channels, layer_norm, the channels-last permute and channel-shuffle views, and ECA's "
         "conv1d over a [N, 1, C] view of pooled features with expand_as into a mul, and split "
         "attention's stack, sum and softmax over a radix ([N, R, C, H, W] views)";
}

}  // namespace zoc::torchscript::detail
