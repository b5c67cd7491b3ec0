// The ATen ops of issues 36 and 37 (hand-written forms, dense prediction), mapped onto the IR ops
// that commits 847b025, a242374 and the activation rows added for them:
//   - F.interpolate: aten::upsample_nearest2d / upsample_bilinear2d, to a size (also one read
//     from another tensor, x.shape[-2:]) or by a scale factor, as upsample_nearest /
//     upsample_bilinear, keeping the scale PyTorch's kernel indexes with;
//   - nn.ConvTranspose2d: aten::conv_transpose2d (scripted) and aten::_convolution with
//     transposed=True (traced) as conv_transpose2d;
//   - argmax, softmax and log_softmax over the channels of an image;
//   - leaky_relu, elu, clamp (as hardtanh) and x.view(n, c, h, w) of features (as reshape);
//   - channel slices x[:, a:b] and torch.split along channels (as slice_channels), and slices
//     of shape lists (x.shape[-2:]);
//   - F.pad with a constant (aten::pad, aten::constant_pad_nd) of an image's H and W as pad;
//   - a [C] parameter reshaped per channel (timm's layer scale gamma), as a binary op's operand;
//   - add, sub, rsub, div and mul of an activation and a constant (a Python number, or a
//     parameter or buffer of the module such as a normalization's mean and std, or a
//     one-element one such as timm's LearnableAffineBlock scale and bias), and sub and
//     div of two activations, with broadcasting as the IR's binary ops define it.
// This table is consulted before aten_ops.cpp's and aten_zoo_ops.cpp's (find_handler): where it
// maps an op they also map (aten::add, mul, softmax, view, _convolution), it takes the new forms
// and hands every other use to theirs (base_handler), so their behaviour is unchanged.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include "compiler/frontend/torchscript/internal.h"
#include "compiler/support/float_decimal.h"

namespace zoc::torchscript::detail {

using Kind = Val::Kind;

// A number known now: a Python scalar or a one-element constant tensor (aten_zoo_ops.cpp).
std::optional<double> constant_scalar(const Val& v);

namespace {

// The handler aten_ops.cpp or aten_zoo_ops.cpp has for this node.
bool base(OpContext& c) {
  Handler h = base_handler(c.node()->kind());
  return h ? h(c) : c.fail("no mapping");
}

bool is_image(OpContext& c, ir::ValueId x) {
  const std::vector<int64_t>* d = c.dims(x);
  return d && d->size() == 3;
}

// Dim `dim` of a tensor of `per_sample` dims plus the batch is dim 1 (channels or features).
bool is_dim1(int64_t dim, size_t per_sample) {
  return dim == 1 || dim == 1 - static_cast<int64_t>(per_sample) - 1;
}

// The output size or the scale factors of aten::upsample_*2d: output_size at `size_at`, then
// at `scales_at` either the `.vec` overload's scale_factors list (what F.interpolate calls) or
// the older overload's scales_h and scales_w.
bool resize_attrs(OpContext& c, size_t size_at, size_t scales_at, bool vec, ir::Attrs& a) {
  if (!c.none(size_at)) {
    auto size = c.pair(size_at, "output_size");
    if (!size) return false;
    a.set("size", pair_attr(*size));
  }
  std::optional<double> sh, sw;
  if (vec && !c.none(scales_at)) {
    const Val& s = c.in(scales_at);
    if (!s.is(Kind::kConst) || !s.value.isDoubleList() || s.value.toDoubleList().size() != 2) {
      return c.fail("scale_factors that are not two numbers known when compiling");
    }
    sh = s.value.toDoubleList()[0], sw = s.value.toDoubleList()[1];
  } else if (!vec && !c.none(scales_at) && !c.none(scales_at + 1)) {
    sh = c.f(scales_at), sw = c.f(scales_at + 1);
    if (!sh || !sw) return false;
  }
  if (sh && sw) {
    a.set("scale_h", float_attr(*sh));
    a.set("scale_w", float_attr(*sw));
  }
  if (!a.has("size") && !a.has("scale_h")) return c.fail("neither an output size nor a scale");
  return true;
}

// aten::upsample_nearest2d(input, output_size, scale_factors) (.vec) or
// (self, output_size, scales_h, scales_w).
bool upsample_nearest(OpContext& c) {
  auto x = c.tensor(0);
  ir::Attrs a;
  if (!x || !resize_attrs(c, 1, 2, c.num_inputs() == 3, a)) return false;
  auto y = c.emit(ir::OpKind::UpsampleNearest, {*x}, a);
  return y && c.result_tensor(*y);
}

// aten::upsample_bilinear2d(input, output_size, align_corners, scale_factors) (.vec) or
// (self, output_size, align_corners, scales_h, scales_w).
bool upsample_bilinear(OpContext& c) {
  auto x = c.tensor(0);
  auto align = x ? c.b(2) : std::nullopt;
  ir::Attrs a;
  if (!align || !resize_attrs(c, 1, 3, c.num_inputs() == 4, a)) return false;
  a.set("align_corners", bool_attr(*align));
  auto y = c.emit(ir::OpKind::UpsampleBilinear, {*x}, a);
  return y && c.result_tensor(*y);
}

// A transposed convolution of weight [in, out / groups, kh, kw].
bool conv_transpose(OpContext& c, size_t stride_at, size_t padding_at, size_t output_padding_at,
                    size_t groups_at, size_t dilation_at) {
  auto x = c.tensor(0);
  const Val* w = x ? c.param(1) : nullptr;
  if (!w) return false;
  if (w->tensor.dim() != 4) return c.fail("a transposed convolution that is not 2-D");
  auto layer = c.layer_of(*w, "weight");
  auto bias = layer ? c.optional_param(2, *layer, "bias") : std::nullopt;
  auto stride = bias ? c.pair(stride_at, "stride") : std::nullopt;
  auto padding = stride ? c.pair(padding_at, "padding") : std::nullopt;
  auto out_pad = padding ? c.pair(output_padding_at, "output_padding") : std::nullopt;
  auto groups = out_pad ? c.i(groups_at) : std::nullopt;
  auto dilation = groups ? c.pair(dilation_at, "dilation") : std::nullopt;
  if (!dilation) return false;
  ir::Attrs a;
  a.set("out_channels", int_attr(w->tensor.size(1) * *groups));
  a.set("kernel", pair_attr({w->tensor.size(2), w->tensor.size(3)}));
  a.set("stride", pair_attr(*stride));
  a.set("padding", pair_attr(*padding));
  a.set("output_padding", pair_attr(*out_pad));
  a.set("dilation", pair_attr(*dilation));
  a.set("groups", int_attr(*groups));
  a.set("bias", bool_attr(*bias));
  auto y = c.emit(ir::OpKind::ConvTranspose2d, {*x}, a, &*layer);
  return y && c.result_tensor(*y);
}

// aten::conv_transpose2d(input, weight, bias, stride, padding, output_padding, groups, dilation)
bool conv_transpose2d(OpContext& c) { return conv_transpose(c, 3, 4, 5, 6, 7); }

// aten::_convolution / aten::convolution(input, weight, bias, stride, padding, dilation,
// transposed, output_padding, groups, ...): the traced spelling of both kinds.
bool convolution(OpContext& c) {
  const Val& t = c.in(6);
  if (t.is(Kind::kConst) && t.value.isBool() && t.value.toBool()) {
    return conv_transpose(c, 3, 4, 7, 8, 5);
  }
  return base(c);
}

// aten::argmax(self, dim, keepdim) over the channels of an image or the features of [N, F].
bool argmax(OpContext& c) {
  auto x = c.tensor(0);
  auto dim = x && !c.none(1) ? c.i(1) : std::nullopt;
  auto keep = dim ? c.b(2) : std::nullopt;
  const std::vector<int64_t>* d = keep ? c.dims(*x) : nullptr;
  if (!d) return c.none(1) ? c.fail("argmax over every element; zoc takes it over dim 1") : false;
  if (!is_dim1(*dim, d->size())) return c.fail(fmt::format("argmax over dim {}", *dim));
  ir::Attrs a;
  a.set("keepdim", bool_attr(*keep));
  auto y = c.emit(ir::OpKind::Argmax, {*x}, a);
  return y && c.result_tensor(*y);
}

// aten::softmax / aten::log_softmax(self, dim, dtype) over dim 1 of an image or [N, F]; the
// softmax of features stays aten_ops.cpp's.
template <ir::OpKind Op>
bool softmax(OpContext& c) {
  const Val& in = c.in(0);
  if (Op == ir::OpKind::Softmax &&
      !(in.is(Kind::kTensor) && in.view == Val::View::kNone && is_image(c, in.id))) {
    return base(c);
  }
  auto x = c.tensor(0);
  auto dim = x ? c.i(1) : std::nullopt;
  const std::vector<int64_t>* d = dim ? c.dims(*x) : nullptr;
  if (!d) return false;
  if (c.num_inputs() > 2 && !c.none(2)) return c.fail("a dtype argument");
  if (!is_dim1(*dim, d->size())) {
    return c.fail(fmt::format("{} over dim {}; zoc takes it over dim 1 (channels or features)",
                              ir::op_info(Op).name, *dim));
  }
  auto y = c.emit(Op, {*x}, {});
  return y && c.result_tensor(*y);
}

// aten::leaky_relu(self, negative_slope) and aten::elu(self, alpha, scale, input_scale): the
// parameter at input 1; ELU's scales must be 1.
template <ir::OpKind Op>
bool alpha_activation(OpContext& c) {
  auto x = c.tensor(0);
  auto alpha = x ? c.f(1) : std::nullopt;
  if (!alpha) return false;
  if (Op == ir::OpKind::Elu) {
    auto scale = c.f(2);
    auto input_scale = scale ? c.f(3) : std::nullopt;
    if (!input_scale) return false;
    if (*scale != 1.0 || *input_scale != 1.0) return c.fail("elu with scale or input_scale not 1");
  }
  ir::Attrs a;
  a.set(Op == ir::OpKind::LeakyRelu ? "negative_slope" : "alpha", float_attr(*alpha));
  auto y = c.emit(Op, {*x}, a);
  return y && c.result_tensor(*y);
}

// aten::clamp(self, min, max) as hardtanh; a missing bound is +-1e30 (hardtanh's range), which
// changes nothing below 1e30 in magnitude.
bool clamp(OpContext& c) {
  auto x = c.tensor(0);
  if (!x) return false;
  std::optional<double> lo = -1e30, hi = 1e30;
  if (!c.none(1)) lo = c.f(1);
  if (lo && !c.none(2)) hi = c.f(2);
  if (!lo || !hi) return false;
  if (*lo > *hi) return c.fail(fmt::format("clamp with min {:g} above max {:g}", *lo, *hi));
  ir::Attrs a;
  a.set("min_val", float_attr(std::max(*lo, -1e30)));
  a.set("max_val", float_attr(std::min(*hi, 1e30)));
  auto y = c.emit(ir::OpKind::Hardtanh, {*x}, a);
  return y && c.result_tensor(*y);
}

// gamma.reshape(1, -1, 1, 1) of a parameter or buffer of shape [C] (timm's layer scale in
// ConvNeXt and MetaNeXt): the same tensor seen per channel, [1, C, 1, 1] or [C, 1, 1], which
// with_constant gives the IR as the stored [C] (param_rank 1).
bool view_param(OpContext& c, const Val& p) {
  auto shape = c.ints(1);
  if (!shape) return false;
  Val out = p;
  const std::vector<int64_t> rows = {1, 1};
  if (p.tensor.dim() == 1 && shape->size() >= 3 &&
      std::equal(shape->end() - 2, shape->end(), rows.begin()) &&
      (shape->size() == 3 || (*shape)[0] == 1) && shape->size() <= 4) {
    const int64_t ch = (*shape)[shape->size() - 3];
    if (ch == -1 || ch == p.tensor.size(0)) {
      out.tensor = p.tensor.reshape(*shape);
      out.stored_rank = p.stored_rank < 0 ? 1 : p.stored_rank;
      c.result(out);
      return true;
    }
  }
  return c.fail(
      fmt::format("a reshape of parameter '{}' of shape [{}] to [{}]; zoc reshapes a "
                  "parameter [C] to [1, C, 1, 1] or [C, 1, 1] (per channel)",
                  p.name, fmt::join(p.tensor.sizes(), ", "), fmt::join(*shape, ", ")));
}

// aten::view / aten::reshape of features [N, F] to an image [N, c, h, w] (an SE block written
// with Linear layers: s.view(n, c, 1, 1)) or of a parameter (view_param); every other reshape
// stays aten_ops.cpp's.
bool view(OpContext& c) {
  const Val &in = c.in(0), &s = c.in(1);
  if (in.is(Kind::kParam) && in.in_state_dict) return view_param(c, in);
  const bool plain = in.is(Kind::kTensor) && in.view == Val::View::kNone;
  const std::vector<int64_t>* d = plain ? c.dims(in.id) : nullptr;
  const size_t rank = s.is(Kind::kList)                           ? s.items.size()
                      : s.is(Kind::kConst) && s.value.isIntList() ? s.value.toIntList().size()
                                                                  : 0;
  if (!d || d->size() != 1 || rank != 4) return base(c);
  auto shape = c.ints(1, /*allow_batch=*/true);
  if (!shape) return false;
  ir::Attrs a;
  if ((*shape)[1] != -1) a.set("channels", int_attr((*shape)[1]));
  a.set("height", int_attr((*shape)[2]));
  a.set("width", int_attr((*shape)[3]));
  auto y = c.emit(ir::OpKind::Reshape, {in.id}, a);
  return y && c.result_tensor(*y);
}

// aten::slice.t(l, start, end, step): items [start, end) of a list (x.shape[-2:] is a slice of
// the list aten::size gives), a constant where every item is one.
bool slice_list(OpContext& c, const Val& list) {
  if (c.num_inputs() != 4) return c.fail("a list slice without start, end and step");
  auto start = c.none(1) ? std::optional<int64_t>(0) : c.i(1);
  auto end = start && !c.none(2) ? c.i(2) : std::optional<int64_t>(INT64_MAX);
  auto step = end ? c.i(3) : std::nullopt;
  if (!step) return false;
  if (*step != 1) return c.fail("a slice of a list with a step");
  const auto n = static_cast<int64_t>(list.items.size());
  const int64_t b = std::clamp(*start < 0 ? *start + n : *start, int64_t{0}, n);
  const int64_t e = std::clamp(*end < 0 ? *end + n : *end, b, n);
  Val out;
  out.kind = Kind::kList;
  c10::List<int64_t> ints;
  bool all_ints = true;
  for (int64_t k = b; k < e; ++k) {
    const Val& item = list.items[static_cast<size_t>(k)];
    out.items.push_back(item);
    all_ints = all_ints && item.is(Kind::kConst) && item.value.isInt();
    if (all_ints) ints.push_back(item.value.toInt());
  }
  c.result(all_ints ? Val::constant(ints) : out);
  return true;
}

// Channels [start, start + count) of image x as slice_channels (the identity for all of them).
std::optional<ir::ValueId> channels(OpContext& c, ir::ValueId x, int64_t start, int64_t count,
                                    int64_t total) {
  if (start == 0 && count == total) return x;
  ir::Attrs a;
  a.set("start", int_attr(start));
  a.set("count", int_attr(count));
  return c.emit(ir::OpKind::SliceChannels, {x}, a);
}

// aten::slice(self, dim, start, end, step): channels of an image (x[:, a:b]), a whole dim
// (the identity that tracing writes for every `:` of x[:, :c, :, :]), or a list.
bool slice(OpContext& c) {
  if (c.in(0).is(Kind::kList)) return slice_list(c, c.in(0));
  if (c.num_inputs() != 5) return c.fail("a slice without dim, start, end and step");
  auto x = c.tensor(0);
  const std::vector<int64_t>* d = x ? c.dims(*x) : nullptr;
  if (!d) return false;
  const std::optional<int64_t> dim = c.i(1);
  const std::optional<int64_t> start = c.none(2) ? std::optional<int64_t>(0) : c.i(2);
  const std::optional<int64_t> end = c.none(3) ? std::optional<int64_t>(INT64_MAX) : c.i(3);
  const std::optional<int64_t> step = c.i(4);
  if (!dim || !start || !end || !step) return false;
  const auto rank = static_cast<int64_t>(d->size()) + 1;
  const int64_t at = *dim < 0 ? *dim + rank : *dim;
  if (at == 0 || at >= rank) {
    if (at == 0 && *start == 0 && *end == INT64_MAX && *step == 1) return c.result_tensor(*x);
    return c.fail(at == 0
                      ? "a slice of the batch, which zoc keeps dynamic"
                      : fmt::format("a slice along dim {} of [N, {}]", *dim, fmt::join(*d, ", ")));
  }
  const int64_t size = (*d)[static_cast<size_t>(at - 1)];
  const int64_t b = std::clamp(*start < 0 ? *start + size : *start, int64_t{0}, size);
  const int64_t e = std::clamp(*end < 0 ? *end + size : *end, b, size);
  if (*step == 1 && b == 0 && e == size) return c.result_tensor(*x);  // x[:, :, :]
  if (d->size() != 3 || at != 1 || *step != 1 || e <= b) {
    return c.fail(
        fmt::format("a slice along dim {} (step {}) of [N, {}]; zoc slices images "
                    "along the channels with step 1",
                    *dim, *step, fmt::join(*d, ", ")));
  }
  auto y = channels(c, *x, b, e - b, size);
  return y && c.result_tensor(*y);
}

// aten::split(self, split_size or split_sizes, dim) and aten::split_with_sizes along the
// channels: pieces of the given sizes (one size: that many channels each, the last smaller).
bool split(OpContext& c) {
  auto x = c.tensor(0);
  auto sizes = x ? c.ints(1) : std::nullopt;
  auto dim = sizes ? c.i(2) : std::nullopt;
  const std::vector<int64_t>* d = dim ? c.dims(*x) : nullptr;
  if (!d) return false;
  if (d->size() != 3 || !is_dim1(*dim, 3)) return c.fail("a split other than along channels");
  const int64_t total = (*d)[0];
  const bool each =
      sizes->size() == 1 && c.node()->kind() == c10::aten::split && c.in(1).value.isInt();
  std::vector<int64_t> pieces = *sizes;
  if (each) {
    pieces.clear();
    for (int64_t at = 0; at < total && (*sizes)[0] > 0; at += (*sizes)[0]) {
      pieces.push_back(std::min((*sizes)[0], total - at));
    }
  }
  int64_t sum = 0;
  for (int64_t p : pieces) sum += p < 1 ? total + 1 : p;
  if (sum != total) {
    return c.fail(fmt::format("split sizes {} of {} channels", fmt::join(*sizes, ", "), total));
  }
  Val list;
  list.kind = Kind::kList;
  int64_t at = 0;
  for (int64_t p : pieces) {
    auto y = channels(c, *x, at, p, total);
    if (!y) return false;
    list.items.push_back(Val::activation(*y));
    at += p;
  }
  c.result(std::move(list));
  return true;
}

// Whether tensor `k` broadcasts against activation x as the IR's tensor operand does: one
// value, per channel of an image ([C, 1, 1], [1, C, 1, 1]) or per feature ([F], [1, F]). A [C]
// against an image broadcasts along W in PyTorch, which the IR does not express.
bool per_channel(OpContext& c, ir::OpKind op, ir::ValueId x, const Val& k) {
  const std::vector<int64_t>* d = c.dims(x);
  if (!d) return false;
  const std::vector<int64_t> seen(k.tensor.sizes().begin(), k.tensor.sizes().end());
  const int64_t ch = d->empty() ? 0 : (*d)[0];
  const bool ok =
      seen.empty() ||
      (d->size() == 3 &&
       (seen == std::vector<int64_t>{ch, 1, 1} || seen == std::vector<int64_t>{1, ch, 1, 1})) ||
      (d->size() == 1 && (seen == std::vector<int64_t>{ch} || seen == std::vector<int64_t>{1, ch}));
  if (ok) return true;
  return c.fail(
      fmt::format("{} of an activation [N, {}] and '{}' of shape [{}]; zoc takes a "
                  "tensor operand per channel ([C, 1, 1], [1, C, 1, 1]) or per feature",
                  ir::op_info(op).name, fmt::join(*d, ", "), k.name, fmt::join(seen, ", ")));
}

// The value of `k` when it is a one-element floating tensor of more than zero dims that leaves
// x's shape as it is (timm's LearnableAffineBlock: `scale * x + bias` with scale and bias of
// shape [1]). A parameter's or buffer's stays a named operand of one value (training trains a
// parameter and keeps a buffer fixed; new weights reach both), as a zero-dim tensor does; a
// plain tensor attribute's, in no state_dict, becomes the IR's `scalar`, read now as the
// shortest decimal of its float. (An ONNX file's one-element initializer is compiled in too,
// with its name: onnx/ops_dense.cpp.)
std::optional<double> one_element_param(OpContext& c, ir::ValueId x, const Val& k) {
  if (!k.is(Kind::kParam) || !k.tensor.defined() || k.tensor.numel() != 1 ||
      !k.tensor.is_floating_point() || k.tensor.dim() == 0) {
    return std::nullopt;
  }
  const std::vector<int64_t>* d = c.dims(x);
  if (!d || k.tensor.dim() > static_cast<int64_t>(d->size()) + 1) return std::nullopt;
  return zoc::decimal_of_float(k.tensor.to(at::kFloat).item<float>());
}

// A module tensor as an operand: a parameter, which training trains (the class's
// __parameters__), or a buffer, which it keeps fixed.
ir::OperandRole operand_role(const Val& k) {
  return k.parameter ? ir::OperandRole::kParameter : ir::OperandRole::kBuffer;
}

// The binary op `op` of activation `x` and constant `k` (Python number or module tensor);
// `reverse`: the constant comes first (c - x, c / x).
bool with_constant(OpContext& c, ir::OpKind op, size_t x_at, const Val& k, bool reverse) {
  auto x = c.tensor(x_at);
  if (!x) return false;
  ir::Attrs a;
  if (reverse && (op == ir::OpKind::Sub || op == ir::OpKind::Div)) {
    a.set("reverse", bool_attr(true));
  }
  std::optional<double> s = constant_scalar(k);
  const std::optional<double> one = s ? std::nullopt : one_element_param(c, *x, k);
  const bool one_value = one && k.in_state_dict;
  if (one && !one_value) s = one;
  if (s) {
    a.set("scalar", float_attr(*s));
    auto y = c.emit(op, {*x}, a);
    return y && c.result_tensor(*y);
  }
  if (!k.is(Kind::kParam) || !k.in_state_dict) {
    return c.fail(
        fmt::format("{} of an activation and a tensor that is neither a number nor "
                    "a parameter or buffer of the module",
                    ir::op_info(op).name));
  }
  if (!one_value && !per_channel(c, op, *x, k)) return false;
  a.set("param_rank", int_attr(k.stored_rank < 0 ? k.tensor.dim() : k.stored_rank));
  if (one_value) a.set("one_value", bool_attr(true));
  auto y = c.emit(op, {*x}, a);
  if (!y) return false;
  c.producer(*y).operand_tensor = k.name;
  c.producer(*y).operand_role = operand_role(k);
  return c.result_tensor(*y);
}

bool is_constant(const Val& v) { return constant_scalar(v).has_value() || v.is(Kind::kParam); }

// alpha (input 2 of add/sub) must be 1.
bool alpha_is_one(OpContext& c) {
  if (c.num_inputs() < 3) return true;
  auto alpha = c.f(2);
  if (alpha && *alpha != 1.0) return c.fail(fmt::format("alpha={:g}", *alpha));
  return alpha.has_value();
}

// A Linear layer's bias added after the product (aten_ops.cpp's add_bias) stays aten_ops.cpp's.
bool is_bias_of_producer(OpContext& c, const Val& x, const Val& p) {
  if (!x.is(Kind::kTensor) || !p.is(Kind::kParam)) return false;
  const ir::Node& n = c.producer(x.id);
  return n.op == ir::OpKind::Linear && p.name == ir::weights_owner(n) + ".bias";
}

// What aten_zoo_ops.cpp's mul keeps: ConvNeXt's `layer_scale * x`, and `x * 1`.
bool zoo_mul(const Val& a, const Val& b) {
  for (const Val* v : {&a, &b}) {
    const std::string suffix = ".layer_scale";
    if (v->is(Kind::kParam) && v->stored_rank < 0 && v->name.size() > suffix.size() &&
        v->name.compare(v->name.size() - suffix.size(), suffix.size(), suffix) == 0) {
      return true;
    }
    if (constant_scalar(*v) == 1.0) return true;
  }
  return false;
}

// aten::add / sub / mul / div (and in-place forms), aten::rsub (other - self).
template <ir::OpKind Op>
bool binary(OpContext& c) {
  const Val &a = c.in(0), &b = c.in(1);
  const bool rsub = c.node()->kind() == c10::aten::rsub;
  const bool has_alpha = Op == ir::OpKind::Add || Op == ir::OpKind::Sub;
  if (is_bias_of_producer(c, a, b) || is_bias_of_producer(c, b, a)) return base(c);
  if (Op == ir::OpKind::Mul && zoo_mul(a, b)) return base(c);
  if (Op == ir::OpKind::Div && c.num_inputs() > 2 && !c.none(2)) {
    return c.fail("div with a rounding_mode");
  }
  if (has_alpha && !alpha_is_one(c)) return false;
  if (a.is(Kind::kTensor) && is_constant(b)) return with_constant(c, Op, 0, b, rsub);
  if (b.is(Kind::kTensor) && is_constant(a)) return with_constant(c, Op, 1, a, !rsub);
  if (Op == ir::OpKind::Add || Op == ir::OpKind::Mul) return base(c);
  auto x = c.tensor(rsub ? 1 : 0);
  auto y = x ? c.tensor(rsub ? 0 : 1) : std::nullopt;
  if (!y) return false;
  auto z = c.emit(Op, {*x, *y}, {});
  return z && c.result_tensor(*z);
}

// The value input `at` of a pad, 0 when None.
std::optional<double> pad_value(OpContext& c, size_t at) {
  if (c.num_inputs() <= at || c.none(at)) return 0.0;
  return c.f(at);
}

// aten::pad(self, pad, mode, value) (F.pad) and aten::constant_pad_nd(self, pad, value): an
// image padded with a constant on H and W, pad = [left, right, top, bottom] (pairs for more
// dims must be zeros).
bool pad(OpContext& c) {
  const bool nd = std::string(c.node()->kind().toQualString()) == "aten::constant_pad_nd";
  auto x = c.tensor(0);
  auto p = x ? c.ints(1) : std::nullopt;
  if (!p) return false;
  if (!nd) {
    auto mode = c.str(2);
    if (!mode) return false;
    if (*mode != "constant") {
      return c.fail(fmt::format("F.pad with mode '{}'; zoc pads with a constant", *mode));
    }
  }
  auto value = pad_value(c, nd ? 2 : 3);
  const std::vector<int64_t>* d = value ? c.dims(*x) : nullptr;
  if (!d) return false;
  bool ok = d->size() == 3 && p->size() % 2 == 0 && !p->empty() && p->size() <= 8;
  for (size_t k = 0; ok && k < p->size(); ++k) {
    ok = k < 4 ? (*p)[k] >= 0 && (*p)[k] <= (1 << 12) : (*p)[k] == 0;
  }
  if (!ok) {
    return c.fail(
        fmt::format("F.pad by [{}] of [N, {}]; zoc pads an image's H and W by 0 to "
                    "4096 on each side",
                    fmt::join(*p, ", "), fmt::join(*d, ", ")));
  }
  const int64_t top = p->size() >= 4 ? (*p)[2] : 0, bottom = p->size() >= 4 ? (*p)[3] : 0;
  ir::Attrs a;
  a.set("top", int_attr(top));
  a.set("left", int_attr((*p)[0]));
  a.set("bottom", int_attr(bottom));
  a.set("right", int_attr((*p)[1]));
  a.set("value", float_attr(*value));
  auto y = c.emit(ir::OpKind::Pad, {*x}, a);
  return y && c.result_tensor(*y);
}

}  // namespace

const std::map<std::string, Handler>& dense_handlers() {
  static const std::map<std::string, Handler> table = {
      {"aten::upsample_nearest2d", upsample_nearest},
      {"aten::upsample_bilinear2d", upsample_bilinear},
      {"aten::conv_transpose2d", conv_transpose2d},
      {"aten::_convolution", convolution},
      {"aten::convolution", convolution},
      {"aten::argmax", argmax},
      {"aten::softmax", softmax<ir::OpKind::Softmax>},
      {"aten::log_softmax", softmax<ir::OpKind::LogSoftmax>},
      {"aten::leaky_relu", alpha_activation<ir::OpKind::LeakyRelu>},
      {"aten::leaky_relu_", alpha_activation<ir::OpKind::LeakyRelu>},
      {"aten::elu", alpha_activation<ir::OpKind::Elu>},
      {"aten::elu_", alpha_activation<ir::OpKind::Elu>},
      {"aten::clamp", clamp},
      {"aten::clamp_", clamp},
      {"aten::slice", slice},
      {"aten::split", split},
      {"aten::split_with_sizes", split},
      {"aten::view", view},
      {"aten::reshape", view},
      {"aten::add", binary<ir::OpKind::Add>},
      {"aten::add_", binary<ir::OpKind::Add>},
      {"aten::sub", binary<ir::OpKind::Sub>},
      {"aten::sub_", binary<ir::OpKind::Sub>},
      {"aten::rsub", binary<ir::OpKind::Sub>},
      {"aten::mul", binary<ir::OpKind::Mul>},
      {"aten::mul_", binary<ir::OpKind::Mul>},
      {"aten::div", binary<ir::OpKind::Div>},
      {"aten::div_", binary<ir::OpKind::Div>},
      {"aten::pad", pad},
      {"aten::constant_pad_nd", pad},
  };
  return table;
}

}  // namespace zoc::torchscript::detail
