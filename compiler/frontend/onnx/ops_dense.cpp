// The ONNX ops of issues 36 and 37 (hand-written forms, dense prediction) as torch.onnx.export
// writes them, mapped onto the IR ops added for those issues:
//   - Resize (F.interpolate): nearest as PyTorch's (asymmetric, floor) and linear with
//     align_corners or pytorch_half_pixel / half_pixel, to sizes or by scales;
//   - ConvTranspose, ArgMax, Softmax and LogSoftmax over the channels of an image, LeakyRelu,
//     Elu;
//   - Add, Sub, Mul and Div of an activation and a one-element constant (x / 2.5, 1 - x), Sub
//     and Div of two activations, and Add of two of different shapes (the IR's broadcasting);
//   - Slice of a constant (a shape's last two elements, x.shape[-2:], before a Resize's sizes).
// This table comes first in find_handler: where it shares an op type with another file's table
// (Add, Mul, Sub, Div, Softmax, Slice), it takes the new forms and hands every other node to
// that file's handler (base_handler), so the zoo's mappings are unchanged.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

#include "compiler/frontend/onnx/internal.h"

namespace zoc::onnx::detail {

using Kind = Val::Kind;

namespace {

bool base(NodeContext& c) {
  Handler h = base_handler(c.node().op_type());
  return h ? h(c) : c.fail("no mapping");
}

// A float attribute as its writer meant it (decimal_of_float); `out` keeps its default if absent.
bool float_attr_of(NodeContext& c, const char* name, double& out) {
  double v = out;
  if (!c.attr(name, v)) return false;
  out = v == out ? v : decimal_of_float(static_cast<float>(v));
  return true;
}

// The per-sample dims of an image input i; nullptr (after failing) otherwise.
const std::vector<int64_t>* image(NodeContext& c, std::optional<ir::ValueId> x, const char* op) {
  const std::vector<int64_t>* d = x ? c.dims(*x) : nullptr;
  if (d && d->size() != 3) {
    c.fail(fmt::format("{} of [N, {}]; zoc applies it to images", op, fmt::join(*d, ", ")));
    return nullptr;
  }
  return d;
}

// Resize's mode attributes as upsample_nearest (PyTorch's nearest: asymmetric, floor) or
// upsample_bilinear (align_corners, or pytorch_half_pixel / half_pixel = align_corners false).
std::optional<ir::OpKind> resize_kind(NodeContext& c, ir::Attrs& a) {
  std::string mode = "nearest", ctm = "half_pixel", nearest = "round_prefer_floor";
  if (!c.attr("mode", mode) || !c.attr("coordinate_transformation_mode", ctm) ||
      !c.attr("nearest_mode", nearest)) {
    return std::nullopt;
  }
  if (mode == "nearest" && ctm == "asymmetric" && nearest == "floor") {
    return ir::OpKind::UpsampleNearest;
  }
  if (mode == "linear" &&
      (ctm == "align_corners" || ctm == "pytorch_half_pixel" || ctm == "half_pixel")) {
    a.set("align_corners", bool_attr(ctm == "align_corners"));
    return ir::OpKind::UpsampleBilinear;
  }
  c.fail(
      fmt::format("Resize with mode '{}', coordinate_transformation_mode '{}'{}; zoc maps "
                  "PyTorch's nearest (asymmetric, floor) and bilinear",
                  mode, ctm, mode == "nearest" ? ", nearest_mode '" + nearest + "'" : ""));
  return std::nullopt;
}

// Where ONNX's linear Resize and PyTorch's bilinear part (the ONNX conformance tests show both):
// pytorch_half_pixel samples an output of length 1 at 0, PyTorch at the input's middle; and
// align_corners with scales uses ONNX's unrounded length in * scale, PyTorch the output's.
bool same_as_pytorch(NodeContext& c, const std::vector<int64_t>& d, const Constant& v,
                     bool by_sizes) {
  std::string ctm;
  if (!c.attr("coordinate_transformation_mode", ctm)) return false;
  for (size_t k : {1, 2}) {
    const int64_t in = d[k];
    const double exact = by_sizes ? static_cast<double>(v.i[k + 1]) : in * double{v.f[k + 1]};
    if (ctm == "pytorch_half_pixel" && std::floor(exact) == 1 && in > 1) {
      return c.fail(
          "a linear Resize to length 1 in pytorch_half_pixel mode, which samples "
          "another point than PyTorch's bilinear");
    }
    if (ctm == "align_corners" && exact != std::floor(exact)) {
      return c.fail(
          fmt::format("a linear Resize with align_corners by a scale that makes {} "
                      "pixels a fraction ({:g}), where ONNX and PyTorch differ",
                      in, exact));
    }
  }
  return true;
}

// Resize-18's attributes at their defaults, the only values PyTorch's interpolate writes:
// keep_aspect_ratio_policy "stretch" (sizes are taken as given), no antialias, no axes.
bool resize18_defaults(NodeContext& c) {
  std::string policy = "stretch";
  int64_t antialias = 0;
  if (!c.attr("keep_aspect_ratio_policy", policy) || !c.attr("antialias", antialias)) {
    return false;
  }
  if (policy != "stretch") {
    return c.fail(
        fmt::format("Resize with keep_aspect_ratio_policy '{}'; zoc resizes to the "
                    "sizes as given ('stretch')",
                    policy));
  }
  if (antialias != 0) return c.fail("Resize with antialias; zoc resizes without antialiasing");
  if (c.has_attr("axes")) {
    return c.fail("Resize with axes; zoc takes scales or sizes of N, C, H, W");
  }
  return true;
}

// Resize(X, roi, scales, sizes) of an image over H and W.
bool resize(NodeContext& c) {
  auto x = c.activation(0);
  const std::vector<int64_t>* d = image(c, x, "Resize");
  ir::Attrs a;
  auto op = d && resize18_defaults(c) ? resize_kind(c, a) : std::nullopt;
  if (!op) return false;
  const bool by_sizes = c.has_input(3);
  const Val* k = by_sizes ? c.shape_constant(3, "sizes") : c.constant(2, "scales");
  if (!k) return false;
  const Constant& v = *k->constant;
  const bool ok = v.numel() == 4 && (by_sizes ? (v.i[1] == (*d)[0] && v.i[2] > 0 && v.i[3] > 0)
                                              : (v.f[0] == 1 && v.f[1] == 1));
  if (!ok) {
    const std::string given = by_sizes ? "to sizes " + target_str(v.i)
                                       : fmt::format("by scales [{}]", fmt::join(v.f, ", "));
    return c.fail(
        fmt::format("Resize {} of [N, {}]; zoc resizes H and W only", given, fmt::join(*d, ", ")));
  }
  if (*op == ir::OpKind::UpsampleBilinear && !same_as_pytorch(c, *d, v, by_sizes)) return false;
  if (by_sizes) {
    a.set("size", pair_attr({v.i[2], v.i[3]}));
  } else {
    a.set("scale_h", float_attr(decimal_of_float(v.f[2])));
    a.set("scale_w", float_attr(decimal_of_float(v.f[3])));
  }
  auto y = c.emit(*op, {*x}, a);
  return y && c.result_activation(*y);
}

// A list attribute of two values, or `fallback` when absent.
std::optional<ir::Pair> pair_of(NodeContext& c, const char* name, ir::Pair fallback) {
  std::vector<int64_t> v;
  if (!c.attr(name, v)) return std::nullopt;
  if (v.empty()) return fallback;
  if (v.size() != 2) {
    c.fail(fmt::format("{} {} of a 2-D transposed convolution", name, fmt::join(v, ", ")));
    return std::nullopt;
  }
  return ir::Pair{v[0], v[1]};
}

// ConvTranspose(X, W [in, out / group, kh, kw], B) with symmetric pads and no output_shape.
bool conv_transpose(NodeContext& c) {
  auto x = c.activation(0);
  const Val* w = x ? c.constant(1, "weight") : nullptr;
  if (!w || !image(c, x, "ConvTranspose")) return false;
  const std::vector<int64_t>& wd = w->constant->dims;
  std::vector<int64_t> pads;
  std::string auto_pad = "NOTSET";
  int64_t group = 1;
  if (wd.size() != 4 || !c.attr("pads", pads) || !c.attr("group", group) ||
      !c.attr("auto_pad", auto_pad)) {
    return wd.size() == 4 ? false : c.fail("a transposed convolution that is not 2-D");
  }
  if (auto_pad != "NOTSET" || c.has_attr("output_shape")) {
    return c.fail("ConvTranspose with auto_pad or output_shape; zoc takes explicit pads");
  }
  if (pads.empty()) pads = {0, 0, 0, 0};
  if (pads.size() != 4 || pads[0] != pads[2] || pads[1] != pads[3]) {
    return c.fail(fmt::format("uneven pads [{}]", fmt::join(pads, ", ")));
  }
  auto stride = pair_of(c, "strides", {1, 1});
  auto dilation = stride ? pair_of(c, "dilations", {1, 1}) : std::nullopt;
  auto out_pad = dilation ? pair_of(c, "output_padding", {0, 0}) : std::nullopt;
  if (!out_pad) return false;
  std::vector<ParamBinding> params = {{"weight", w->constant, w->name, false}};
  if (c.has_input(2)) {
    const Val* b = c.constant(2, "bias");
    if (!b) return false;
    params.push_back({"bias", b->constant, b->name, false});
  }
  ir::Attrs a;
  a.set("out_channels", int_attr(wd[1] * group));
  a.set("kernel", pair_attr({wd[2], wd[3]}));
  a.set("stride", pair_attr(*stride));
  a.set("padding", pair_attr({pads[0], pads[1]}));
  a.set("output_padding", pair_attr(*out_pad));
  a.set("dilation", pair_attr(*dilation));
  a.set("groups", int_attr(group));
  a.set("bias", bool_attr(c.has_input(2)));
  auto y = c.emit(ir::OpKind::ConvTranspose2d, {*x}, a, std::move(params));
  return y && c.result_activation(*y);
}

// Whether `axis` of a tensor of `per_sample` dims plus the batch is axis 1.
bool is_axis1(int64_t axis, size_t per_sample) {
  return axis == 1 || axis == 1 - static_cast<int64_t>(per_sample) - 1;
}

// ArgMax(axis, keepdims, select_last_index 0) over axis 1.
bool argmax(NodeContext& c) {
  auto x = c.activation(0);
  const std::vector<int64_t>* d = x ? c.dims(*x) : nullptr;
  int64_t axis = 0, keep = 1, last = 0;
  if (!d || !c.attr("axis", axis) || !c.attr("keepdims", keep) ||
      !c.attr("select_last_index", last)) {
    return false;
  }
  if (!is_axis1(axis, d->size()) || last != 0) {
    return c.fail(fmt::format("ArgMax at axis {}{}; zoc takes the first maximum over axis 1", axis,
                              last ? " (the last maximum)" : ""));
  }
  ir::Attrs a;
  a.set("keepdim", bool_attr(keep != 0));
  auto y = c.emit(ir::OpKind::Argmax, {*x}, a);
  return y && c.result_activation(*y);
}

// Softmax and LogSoftmax over the channels of an image (Softmax of [N, F]: ops_tensor.cpp's).
template <ir::OpKind Op>
bool softmax(NodeContext& c) {
  const Val& in = c.in(0);
  auto dims = in.is(Kind::kActivation) && in.view == Val::View::kNone ? c.dims(in.id) : nullptr;
  int64_t axis = c.opset() < 13 ? 1 : -1;
  if (!c.attr("axis", axis)) return false;
  if (Op == ir::OpKind::Softmax && (!dims || dims->size() != 3 || !is_axis1(axis, 3))) {
    return base(c);  // ops_tensor.cpp's softmax of [N, F], and its message for the rest
  }
  auto x = c.activation(0);
  const std::vector<int64_t>* d = x ? c.dims(*x) : nullptr;
  if (!d) return false;
  if (!is_axis1(axis, d->size()) || (c.opset() < 13 && d->size() != 1)) {
    return c.fail(fmt::format("{} at axis {} of [N, {}]; zoc takes it over axis 1",
                              shown_text(c.node().op_type()), axis, fmt::join(*d, ", ")));
  }
  auto y = c.emit(Op, {*x}, {});
  return y && c.result_activation(*y);
}

// LeakyRelu(alpha 0.01) and Elu(alpha 1).
template <ir::OpKind Op>
bool alpha_activation(NodeContext& c) {
  auto x = c.activation(0);
  double alpha = Op == ir::OpKind::LeakyRelu ? 0.01 : 1.0;
  if (!x || !float_attr_of(c, "alpha", alpha)) return false;
  ir::Attrs a;
  a.set(Op == ir::OpKind::LeakyRelu ? "negative_slope" : "alpha", float_attr(alpha));
  auto y = c.emit(Op, {*x}, a);
  return y && c.result_activation(*y);
}

// A one-element floating constant's value.
std::optional<double> one_value(const Val& v) {
  if (!v.is(Kind::kConstant) || v.constant->numel() != 1) return std::nullopt;
  const Constant& k = *v.constant;
  return k.floating ? decimal_of_float(k.f[0]) : static_cast<double>(k.i[0]);
}

// Add, Sub, Mul, Div of an activation and a one-element constant, Sub and Div of two activations,
// Add of two of different shapes; the rest (a bias, a layer scale, GELU's x / sqrt(2), Add of one
// shape, Mul of two activations) is the other tables'.
template <ir::OpKind Op>
bool binary(NodeContext& c) {
  const Val &a = c.in(0), &b = c.in(1);
  const bool gelu_start = Op == ir::OpKind::Div && b.is(Kind::kConstant) &&
                          b.constant->numel() == 1 && b.constant->floating &&
                          b.constant->f[0] == static_cast<float>(std::sqrt(2.0));
  for (size_t k : {0, 1}) {
    const auto s = one_value(c.in(k));
    if (!s || gelu_start || !c.in(1 - k).is(Kind::kActivation)) continue;
    auto x = c.activation(1 - k);
    if (!x) return false;
    ir::Attrs attrs;
    attrs.set("scalar", float_attr(*s));
    if (k == 0 && (Op == ir::OpKind::Sub || Op == ir::OpKind::Div)) {
      attrs.set("reverse", bool_attr(true));
    }
    auto y = c.emit(Op, {*x}, attrs);
    // An initializer's value (the tensor's own name; a Constant node's tensor has none):
    // weights/load.cpp checks a weights file that holds it.
    if (y) c.producer(*y).scalar_from = c.in(k).constant->name;
    return y && c.result_activation(*y);
  }
  const bool two = a.is(Kind::kActivation) && b.is(Kind::kActivation) &&
                   a.view == Val::View::kNone && b.view == Val::View::kNone;
  if (!two || Op == ir::OpKind::Mul || gelu_start) return base(c);
  const std::vector<int64_t>* da = c.dims(a.id);
  const std::vector<int64_t>* db = da ? c.dims(b.id) : nullptr;
  if (Op == ir::OpKind::Add && (!db || *da == *db)) return base(c);  // ops_tensor.cpp's add
  auto z = c.emit(Op, {a.id, b.id}, {});
  return z && c.result_activation(*z);
}

// Slice of a 1-D integer constant along axis 0 with step 1 (x.shape[-2:]); Slice of an
// activation is ops_zoo.cpp's.
bool slice(NodeContext& c) {
  if (!all_inputs_constant(c)) return base(c);
  const Val* k = c.shape_constant(0, "data");
  const Val* s = k ? c.constant(1, "starts") : nullptr;
  const Val* e = s ? c.constant(2, "ends") : nullptr;
  if (!e) return false;
  const Constant& v = *k->constant;
  const bool steps_one = !c.has_input(4) || (c.in(4).is(Kind::kConstant) &&
                                             c.in(4).constant->i == std::vector<int64_t>{1});
  const bool axis0 = !c.has_input(3) || (c.in(3).is(Kind::kConstant) &&
                                         (c.in(3).constant->i == std::vector<int64_t>{0} ||
                                          c.in(3).constant->i == std::vector<int64_t>{-1}));
  if (v.floating || v.dims.size() != 1 || s->constant->i.size() != 1 ||
      e->constant->i.size() != 1 || !steps_one || !axis0) {
    return c.fail("a Slice of a constant other than a 1-D integer one along axis 0, step 1");
  }
  const auto n = static_cast<int64_t>(v.i.size());
  auto at = [n](int64_t i) { return std::clamp(i < 0 ? i + n : i, int64_t{0}, n); };
  const int64_t b = at(s->constant->i[0]), end = std::max(b, at(e->constant->i[0]));
  Constant out;
  out.floating = false;
  out.dims = {end - b};
  out.i.assign(v.i.begin() + b, v.i.begin() + end);
  if (!v.batch.empty()) out.batch.assign(v.batch.begin() + b, v.batch.begin() + end);
  if (std::none_of(out.batch.begin(), out.batch.end(), [](bool x) { return x; })) {
    out.batch.clear();
  }
  return c.result_constant(std::move(out));
}

const OpEntry kDenseOps[] = {
    {"Resize", resize},
    {"ConvTranspose", conv_transpose},
    {"ArgMax", argmax},
    {"Softmax", softmax<ir::OpKind::Softmax>},
    {"LogSoftmax", softmax<ir::OpKind::LogSoftmax>},
    {"LeakyRelu", alpha_activation<ir::OpKind::LeakyRelu>},
    {"Elu", alpha_activation<ir::OpKind::Elu>},
    {"Add", binary<ir::OpKind::Add>},
    {"Sub", binary<ir::OpKind::Sub>},
    {"Mul", binary<ir::OpKind::Mul>},
    {"Div", binary<ir::OpKind::Div>},
    {"Slice", slice},
};

}  // namespace

std::span<const OpEntry> dense_ops() { return kDenseOps; }

}  // namespace zoc::onnx::detail
