// The op table, part one: ONNX's image layers (Conv, BatchNormalization, MaxPool, AveragePool,
// GlobalAveragePool) to IR ops.
//
// ONNX describes windows more freely than the IR: padding per edge (`pads` = [top, left,
// bottom, right]) or computed (`auto_pad` SAME_UPPER / SAME_LOWER), 1-, 2- and 3-D kernels,
// strides that default to 1 rather than to the kernel. The IR pads both sides of an axis alike,
// in 2-D, so each handler here turns ONNX's form into the IR's where the two mean the same and
// names what differs otherwise; a Conv's uneven pads become a pad node before it. Attribute
// defaults are the schemas' (onnx/defs/nn/defs.cc); where an op changed between opsets 6 and
// 17 the handler reads the node's opset.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "compiler/frontend/onnx/internal.h"
#include "compiler/ir/shapes.h"

namespace zoc::onnx::detail {
namespace {

// The largest kernel, stride, dilation or padding the IR takes (ops.def), checked before the
// window arithmetic here multiplies them.
constexpr int64_t kMaxWindow = 1 << 12;

std::string list_str(const std::vector<int64_t>& v) {
  return fmt::format("[{}]", fmt::join(v, ", "));
}

// An image activation [N, C, H, W] at input i and its per-sample dims.
struct Image {
  ir::ValueId id = ir::kNoValue;
  std::vector<int64_t> dims;  // C, H, W
};

std::optional<Image> image(NodeContext& c, size_t i) {
  auto x = c.activation(i);
  const std::vector<int64_t>* d = x ? c.dims(*x) : nullptr;
  if (!d) return std::nullopt;
  if (d->size() != 3) {
    c.fail(fmt::format("its input is [N, {}], not an image [N, C, H, W]", fmt::join(*d, ", ")));
    return std::nullopt;
  }
  return Image{*x, *d};
}

// Each of `v` within [lo, kMaxWindow]; else a failure naming the attribute.
bool in_window_range(NodeContext& c, const char* name, const std::vector<int64_t>& v, int64_t lo) {
  for (int64_t x : v) {
    if (x < lo || x > kMaxWindow) {
      return c.fail(fmt::format("{} {} is outside what zoc supports ({} to {})", name, list_str(v),
                                lo, kMaxWindow));
    }
  }
  return true;
}

// A 2-D attribute such as strides: [h, w], or `dflt` when absent.
std::optional<ir::Pair> pair_attr_of(NodeContext& c, const char* name, ir::Pair dflt) {
  std::vector<int64_t> v;
  if (!c.attr(name, v)) return std::nullopt;
  if (!c.has_attr(name)) return dflt;
  if (v.size() != 2) {
    c.fail(
        fmt::format("{} {} has {} values; zoc supports 2-D layers", name, list_str(v), v.size()));
    return std::nullopt;
  }
  if (!in_window_range(c, name, v, 1)) return std::nullopt;
  return ir::Pair{v[0], v[1]};
}

// The padding of a 2-D window (kernel `k`, stride `s`, dilation `d`) over an h x w input, from
// `auto_pad` and `pads`, if it is the same on both sides of each axis.
std::optional<ir::Pair> window_padding(NodeContext& c, const Image& x, ir::Pair k, ir::Pair s,
                                       ir::Pair d) {
  std::string auto_pad = "NOTSET";
  std::vector<int64_t> pads;
  if (!c.attr("auto_pad", auto_pad) || !c.attr("pads", pads)) return std::nullopt;
  if (auto_pad == "NOTSET") {
    if (pads.empty()) return ir::Pair{0, 0};
    if (pads.size() != 4) {
      c.fail(fmt::format("pads {} has {} values; zoc supports 2-D layers", list_str(pads),
                         pads.size()));
      return std::nullopt;
    }
    if (pads[0] != pads[2] || pads[1] != pads[3]) {
      c.fail(
          fmt::format("asymmetric pads {} (top, left, bottom, right): zoc pads both sides of "
                      "an axis alike",
                      list_str(pads)));
      return std::nullopt;
    }
    if (!in_window_range(c, "pads", pads, 0)) return std::nullopt;
    return ir::Pair{pads[0], pads[1]};
  }
  if (auto_pad == "VALID") return ir::Pair{0, 0};
  if (auto_pad != "SAME_UPPER" && auto_pad != "SAME_LOWER") {
    c.fail(fmt::format("auto_pad '{}' is not one ONNX defines", shown_text(auto_pad)));
    return std::nullopt;
  }
  // SAME: the output is ceil(in / stride); the padding that takes splits evenly or not at all.
  if (s.h < 1 || s.w < 1) {
    c.fail("a stride below 1");
    return std::nullopt;
  }
  auto total = [](int64_t in, int64_t kk, int64_t ss, int64_t dd) {
    const int64_t out = (in + ss - 1) / ss;
    return std::max<int64_t>(0, (out - 1) * ss + (kk - 1) * dd + 1 - in);
  };
  const int64_t th = total(x.dims[1], k.h, s.h, d.h), tw = total(x.dims[2], k.w, s.w, d.w);
  if (th % 2 != 0 || tw % 2 != 0) {
    c.fail(
        fmt::format("auto_pad {} needs padding {}x{} for this {}x{} input, which does not "
                    "split evenly between the two sides: zoc pads both sides of an axis alike",
                    auto_pad, th, tw, x.dims[1], x.dims[2]));
    return std::nullopt;
  }
  return ir::Pair{th / 2, tw / 2};
}

// Input i as a floating constant of rank `rank` (-1: any), for a layer's parameter.
const Val* param(NodeContext& c, size_t i, const char* what, int rank) {
  const Val* v = c.constant(i, what);
  if (!v) return nullptr;
  if (!v->constant->floating) {
    c.fail(fmt::format("its {} ('{}') is an integer tensor", what, shown_text(v->name)));
    return nullptr;
  }
  if (rank >= 0 && v->constant->dims.size() != static_cast<size_t>(rank)) {
    c.fail(fmt::format("its {} ('{}') has shape {}, not rank {}", what, shown_text(v->name),
                       list_str(v->constant->dims), rank));
    return nullptr;
  }
  return v;
}

ParamBinding bind(const char* suffix, const Val& v) {
  return ParamBinding{suffix, v.constant, v.name, false};
}

// A convolution's padding: window_padding's, or for explicit pads that differ between the two
// sides of an axis (TF-"same" padding as the dynamo exporter writes it: [0, 0, 1, 1]), the
// padding both sides share, the rest a pad node before the convolution, which `input` becomes.
std::optional<ir::Pair> conv_padding(NodeContext& c, const Image& x, ir::Pair k, ir::Pair s,
                                     ir::Pair d, ir::ValueId& input) {
  std::string auto_pad = "NOTSET";
  std::vector<int64_t> pads;
  if (!c.attr("auto_pad", auto_pad) || !c.attr("pads", pads)) return std::nullopt;
  if (auto_pad != "NOTSET" || pads.size() != 4 || (pads[0] == pads[2] && pads[1] == pads[3])) {
    return window_padding(c, x, k, s, d);
  }
  if (!in_window_range(c, "pads", pads, 0)) return std::nullopt;
  const ir::Pair both{std::min(pads[0], pads[2]), std::min(pads[1], pads[3])};
  auto y = emit_pad(c, input,
                    {pads[0] - both.h, pads[1] - both.w, pads[2] - both.h, pads[3] - both.w}, 0.0);
  if (!y) return std::nullopt;
  input = *y;
  return both;
}

// Conv(X, W, B): W is [M, C/group, kH, kW].
bool conv(NodeContext& c) {
  auto x = image(c, 0);
  const Val* w = x ? c.constant(1, "weight") : nullptr;
  if (!w) return false;
  if (w->constant->dims.size() != 4) {
    return c.fail(fmt::format("a {}-D convolution (weight {}); zoc supports 2-D convolutions",
                              static_cast<int>(w->constant->dims.size()) - 2,
                              list_str(w->constant->dims)));
  }
  if (!param(c, 1, "weight", 4)) return false;
  const Val* b = c.has_input(2) ? param(c, 2, "bias", 1) : nullptr;
  if (c.has_input(2) && !b) return false;
  const std::vector<int64_t>& wd = w->constant->dims;
  const ir::Pair k{wd[2], wd[3]};
  if (!in_window_range(c, "kernel", {k.h, k.w}, 1)) return false;
  int64_t group = 1;
  auto kernel = pair_attr_of(c, "kernel_shape", k);
  auto stride = pair_attr_of(c, "strides", {1, 1});
  auto dilation = pair_attr_of(c, "dilations", {1, 1});
  if (!kernel || !stride || !dilation || !c.attr("group", group)) return false;
  if (*kernel != k) {
    return c.fail(fmt::format("kernel_shape {}x{} differs from its weight's {}x{}", kernel->h,
                              kernel->w, k.h, k.w));
  }
  ir::ValueId input = x->id;
  auto padding = conv_padding(c, *x, k, *stride, *dilation, input);
  if (!padding) return false;
  ir::Attrs a;
  a.set("out_channels", int_attr(wd[0]));
  a.set("kernel", pair_attr(k));
  a.set("stride", pair_attr(*stride));
  a.set("padding", pair_attr(*padding));
  a.set("dilation", pair_attr(*dilation));
  a.set("groups", int_attr(group));
  a.set("bias", bool_attr(b != nullptr));
  std::vector<ParamBinding> params = {bind("weight", *w)};
  if (b) params.push_back(bind("bias", *b));
  auto y = c.emit(ir::OpKind::Conv2d, {input}, a, std::move(params));
  return y && c.result_activation(*y);
}

// BatchNormalization(X, scale, B, mean, var) in its inference form. ONNX's momentum weighs the
// running statistic (0.9); PyTorch's, which the IR keeps for training, weighs the new one (0.1).
bool batch_norm(NodeContext& c) {
  auto x = c.activation(0);
  const std::vector<int64_t>* d = x ? c.dims(*x) : nullptr;
  if (!d) return false;
  if (d->size() == 1) {
    return c.fail(
        fmt::format("BatchNorm over a 2-D (N, C) tensor ([N, {}], BatchNorm1d) is not "
                    "supported; zoc's BatchNorm takes images [N, C, H, W]",
                    (*d)[0]));
  }
  if (d->size() != 3) {
    return c.fail(
        fmt::format("batch normalization of [N, {}]; zoc's BatchNorm takes images "
                    "[N, C, H, W]",
                    fmt::join(*d, ", ")));
  }
  const char* what[] = {"scale", "bias", "mean", "var"};
  const char* suffix[] = {"weight", "bias", "running_mean", "running_var"};
  std::vector<ParamBinding> params;
  for (size_t i = 0; i < 4; ++i) {
    const Val* p = param(c, i + 1, what[i], 1);
    if (!p) return false;
    params.push_back(bind(suffix[i], *p));
  }
  double eps = 1e-5, momentum = 0.9;
  int64_t is_test = 0, spatial = 1, training = 0;
  if (!c.attr("epsilon", eps) || !c.attr("momentum", momentum) || !c.attr("is_test", is_test) ||
      !c.attr("spatial", spatial) || !c.attr("training_mode", training)) {
    return false;
  }
  if ((c.opset() < 7 && is_test == 0) || training != 0) {
    return c.fail("training mode (batch statistics): export the model in eval mode");
  }
  if (spatial == 0) return c.fail("spatial=0 (statistics per element, not per channel)");
  for (size_t k = 1; k < 5; ++k) {
    if (c.output_used(k)) return c.fail("its running-statistics outputs are used (training mode)");
  }
  ir::Attrs a;
  a.set("eps", float_attr(eps));
  const double torch_momentum = decimal_of_float(static_cast<float>(1.0 - momentum));
  if (torch_momentum >= 0 && torch_momentum <= 1) a.set("momentum", float_attr(torch_momentum));
  auto y = c.emit(ir::OpKind::BatchNorm2d, {*x}, a, std::move(params));
  return y && c.result_activation(*y);
}

// MaxPool and AveragePool of image x; `padded`: the zero padding of a Pad before an AveragePool
// (torch.onnx.export writes PyTorch's count_include_pad=True so). ONNX computes a ceil_mode
// output size without PyTorch's rule that the last window must start inside the input or its
// left padding; where the two differ the pool is refused, since the IR follows PyTorch.
bool pool(NodeContext& c, const Image& x, bool is_max, std::optional<ir::Pair> padded) {
  std::vector<int64_t> kernel_shape;
  int64_t ceil_mode = 0, include_pad = 0;
  if (!c.attr("kernel_shape", kernel_shape) || !c.attr("ceil_mode", ceil_mode) ||
      !c.attr("count_include_pad", include_pad)) {
    return false;
  }
  if (kernel_shape.size() != 2) {
    return c.fail(fmt::format("kernel_shape {}: zoc pools 2-D windows", list_str(kernel_shape)));
  }
  if (!in_window_range(c, "kernel_shape", kernel_shape, 1)) return false;
  const ir::Pair k{kernel_shape[0], kernel_shape[1]};
  auto stride = pair_attr_of(c, "strides", {1, 1});
  auto dilation = pair_attr_of(c, "dilations", {1, 1});
  if (!stride || !dilation) return false;
  if (is_max && c.output_used(1)) return c.fail("its Indices output is used");
  auto padding = window_padding(c, x, k, *stride, *dilation);
  if (!padding) return false;
  if (padded) {
    if (*padding != ir::Pair{0, 0} || ceil_mode) {
      return c.fail(
          "an AveragePool with pads or ceil_mode of a Pad's result: zoc takes the Pad "
          "as the pool's padding (count_include_pad) only for a pool without either");
    }
    padding = padded;
    include_pad = 1;
  }
  if (!is_max && k == ir::Pair{1, 1} && *stride == ir::Pair{1, 1} && *padding == ir::Pair{0, 0}) {
    return c.result_activation(x.id);  // the identity (adaptive pooling to the input's size)
  }
  if (ceil_mode) {
    for (auto [in, kk, s, p, d] :
         {std::array<int64_t, 5>{x.dims[1], k.h, stride->h, padding->h, dilation->h},
          std::array<int64_t, 5>{x.dims[2], k.w, stride->w, padding->w, dilation->w}}) {
      const int64_t room = in + 2 * p - ((kk - 1) * d + 1);
      if (room < 0 || s < 1) continue;  // the shape rule reports it
      const int64_t onnx = (room + s - 1) / s + 1;
      const auto torch = ir::pool_output_size(in, kk, s, p, d, true);
      if (torch && *torch != onnx) {
        return c.fail(
            fmt::format("ceil_mode gives {} outputs along an axis of {} where PyTorch's "
                        "rule (the last window starts inside the input), which zoc "
                        "follows, gives {}",
                        onnx, in, *torch));
      }
    }
  }
  ir::Attrs a;
  a.set("kernel", pair_attr(k));
  a.set("stride", pair_attr(*stride));
  a.set("padding", pair_attr(*padding));
  a.set("ceil_mode", bool_attr(ceil_mode != 0));
  if (is_max) {
    a.set("dilation", pair_attr(*dilation));
  } else {
    if (*dilation != ir::Pair{1, 1}) return c.fail("dilated average pooling");
    a.set("count_include_pad", bool_attr(include_pad != 0));
  }
  auto y = c.emit(is_max ? ir::OpKind::MaxPool2d : ir::OpKind::AvgPool2d, {x.id}, a);
  return y && c.result_activation(*y);
}

bool max_pool(NodeContext& c) {
  auto x = image(c, 0);
  return x && pool(c, *x, true, std::nullopt);
}

bool average_pool(NodeContext& c) {
  auto x = image(c, 0);
  return x && pool(c, *x, false, std::nullopt);
}

bool global_average_pool(NodeContext& c) {
  auto x = image(c, 0);
  auto y = x ? c.emit(ir::OpKind::GlobalAvgPool, {x->id}, {}) : std::nullopt;
  return y && c.result_activation(*y);
}

const OpEntry kLayerOps[] = {
    {"Conv", conv},
    {"BatchNormalization", batch_norm},
    {"MaxPool", max_pool},
    {"AveragePool", average_pool},
    {"GlobalAveragePool", global_average_pool},
};

}  // namespace

std::span<const OpEntry> layer_ops() { return kLayerOps; }

bool average_pool_padded(NodeContext& c, const Val& x, ir::Pair pad) {
  const std::vector<int64_t>* d = c.dims(x.id);
  if (!d) return false;
  if (d->size() != 3 || x.view != Val::View::kNone) {
    return c.fail(fmt::format("its input is {} [N, {}], not an image [N, C, H, W]",
                              view_name(x.view), fmt::join(viewed_dims(x, *d), ", ")));
  }
  return pool(c, Image{x.id, *d}, false, pad);
}

}  // namespace zoc::onnx::detail
