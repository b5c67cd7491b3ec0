// The op table, part three: what torch.onnx.export writes for the classic CNN zoo beyond ResNet
// (issue 20), each mapped to the IR ops the TorchScript frontend gives the same torchvision model
// (compiler/frontend/torchscript/aten_zoo_ops.cpp), so that both routes build one IR:
//   - Mul: squeeze-and-excitation's scale * x (MobileNetV3, EfficientNet, RegNetY) as a `mul`
//     with the channel vector second; ConvNeXt's layer_scale * x (an initializer [C, 1, 1]) as
//     a `layer_scale`; x * Sigmoid(x) as SiLU and x * HardSigmoid(x) as hardswish (the exporter
//     writes SiLU so, and hardswish so below opset 14), by turning the gate's IR node into the
//     activation;
//   - HardSigmoid with PyTorch's alpha 1/6 and beta 0.5 (HardSwish is a unary op of
//     ops_tensor.cpp);
//   - ReduceMean over H and W (ShuffleNetV2, MNASNet) as global pooling (+ flatten);
//   - Slice and Split along the channels (ShuffleNetV2's chunk) as slice_channels;
//   - Transpose and Reshape into and out of the views of Val::View: ConvNeXt's channels-last
//     permutation, and ShuffleNet's channel shuffle (Reshape to [N, g, C/g, H, W], Transpose
//     perm [0, 2, 1, 3, 4], Reshape back), written as one channel_shuffle;
//   - LayerNormalization (opset 17) over the channels of a channels-last view or the features of
//     [N, F]; MatMul on a channels-last view as a 1x1 convolution keeping its [O, C] weight;
//   - Pad with a constant on H and W: zeros alike on both sides followed into the AveragePool
//     after it (ops_decomposed.cpp), anything else a pad node.
// Each handler accepts exactly these forms and names what it does not.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "compiler/frontend/onnx/internal.h"
#include "compiler/ir/shapes.h"

namespace zoc::onnx::detail {

using Kind = Val::Kind;
using View = Val::View;

namespace {

std::string list_str(const std::vector<int64_t>& v) {
  return fmt::format("[{}]", fmt::join(v, ", "));
}

// Axes of a rank-`rank` tensor made non-negative and sorted; nullopt if one is outside.
std::optional<std::vector<int64_t>> normalized_axes(std::vector<int64_t> axes, int64_t rank) {
  for (int64_t& a : axes) {
    if (a < -rank || a >= rank) return std::nullopt;
    if (a < 0) a += rank;
  }
  std::sort(axes.begin(), axes.end());
  return axes;
}

// x * gamma with gamma a constant [C, 1, 1] (or [1, C, 1, 1]): a layer_scale layer whose
// parameter is `<layer>.layer_scale`, as ConvNeXt's state_dict names it.
bool layer_scale(NodeContext& c, size_t xi, size_t gi) {
  auto x = c.activation(xi);
  const Val* g = x ? c.constant(gi, "scale") : nullptr;
  const std::vector<int64_t>* d = g ? c.dims(*x) : nullptr;
  if (!d) return false;
  const std::vector<int64_t>& shape = g->constant->dims;
  if (g->constant->numel() == 1 && g->constant->floating && g->constant->f[0] == 1.0f) {
    return c.result_activation(*x);  // x * 1
  }
  const bool per_channel = d->size() == 3 && (shape == std::vector<int64_t>{(*d)[0], 1, 1} ||
                                              shape == std::vector<int64_t>{1, (*d)[0], 1, 1});
  if (!per_channel || !g->constant->floating) {
    return c.fail(
        fmt::format("multiplying [N, {}] by constant '{}' of shape {}; zoc multiplies an "
                    "image by a per-channel [C, 1, 1] constant (a layer scale), by 1, or "
                    "by another activation",
                    fmt::join(*d, ", "), shown_text(g->name), list_str(shape)));
  }
  auto gamma = std::make_shared<Constant>(*g->constant);
  gamma->dims = {(*d)[0], 1, 1};
  auto y = c.emit(ir::OpKind::LayerScale, {*x}, {}, {{"layer_scale", gamma, g->name, false}});
  return y && c.result_activation(*y);
}

// a * gate(a), where the gate is the IR node of a Sigmoid or a HardSigmoid (alpha 1/6) of a read
// by nothing but this Mul: that node becomes SiLU or hardswish. False, with nothing recorded,
// where the product is not one of these.
bool gated_activation(NodeContext& c, size_t ai, size_t gi) {
  const Val &a = c.in(ai), &g = c.in(gi);
  if (a.view != View::kNone || g.view != View::kNone || c.readers_of_value(g.id) != 1) return false;
  ir::Node& gate = c.producer(g.id);
  if (gate.inputs.size() != 1 || gate.inputs[0] != a.id) return false;
  if (gate.op == ir::OpKind::Sigmoid) {
    gate.op = ir::OpKind::Silu;
  } else if (gate.op == ir::OpKind::Hardsigmoid) {
    gate.op = ir::OpKind::Hardswish;
  } else {
    return false;
  }
  return c.result_activation(g.id);
}

// Mul(A, B) of activations: x * gate(x), two tensors of one shape, or an image and its channel
// vector [N, C, 1, 1] in either order (the IR takes the vector second); an activation and a
// constant: layer_scale. Two constants are folded (ops_shape.cpp), a decomposition's steps
// followed (ops_decomposed.cpp).
bool mul(NodeContext& c) {
  for (size_t k : {0, 1}) {
    if (c.in(k).is(Kind::kConstant)) return layer_scale(c, 1 - k, k);
  }
  if (c.in(0).is(Kind::kActivation) && c.in(1).is(Kind::kActivation) &&
      (gated_activation(c, 0, 1) || gated_activation(c, 1, 0))) {
    return true;
  }
  auto p = c.activation_pair();
  if (!p) return false;
  const Expected<bool> swap = ir::mul_swaps_operands(p->da, p->db);
  if (!swap) return c.fail(swap.error().message);
  auto z = c.emit(ir::OpKind::Mul, *swap ? std::vector{p->b, p->a} : std::vector{p->a, p->b}, {});
  return z && c.result_activation(*z);
}

// HardSigmoid(x) = max(0, min(1, alpha * x + beta)): PyTorch's hardsigmoid is alpha 1/6, beta
// 0.5 (ONNX's defaults, 0.2 and 0.5, are Keras's).
bool hard_sigmoid(NodeContext& c) {
  const Val* x = c.viewed(0);
  double alpha = 0.2, beta = 0.5;
  if (!x || !c.attr("alpha", alpha) || !c.attr("beta", beta)) return false;
  const Val v = *x;
  if (static_cast<float>(alpha) != 1.0f / 6.0f || static_cast<float>(beta) != 0.5f) {
    return c.fail(
        fmt::format("alpha {:g} and beta {:g}: zoc's hardsigmoid is PyTorch's, "
                    "relu6(x + 3) / 6 (alpha 1/6, beta 0.5)",
                    alpha, beta));
  }
  auto y = c.emit(ir::OpKind::Hardsigmoid, {v.id}, {});
  return y && c.result_like(*y, v);
}

// ReduceMean over H and W of an image: global pooling, then a flatten to [N, C] without
// keepdims; over the channels of a channels-last view: a decomposed LayerNormalization's mean.
bool reduce_mean(NodeContext& c) {
  const Val* x = c.viewed(0);
  int64_t keepdims = 1;
  if (!x || !c.attr("keepdims", keepdims)) return false;
  const Val v = *x;
  const auto reduced = reduce_axes(c);
  if (!reduced) return false;
  if (reduced->identity) return c.result_like(v.id, v);
  const std::vector<int64_t>& axes = reduced->axes;
  const std::vector<int64_t>* d = c.dims(v.id);
  if (!d) return false;
  const std::vector<int64_t> shown = viewed_dims(v, *d);
  const auto sorted = normalized_axes(axes, static_cast<int64_t>(shown.size()) + 1);
  if (v.view == View::kChannelsLast && sorted == std::vector<int64_t>{3} && keepdims) {
    return start_layer_norm(c, v);
  }
  if (v.view != View::kNone || d->size() != 3 || sorted != std::vector<int64_t>{2, 3}) {
    return c.fail(fmt::format(
        "a mean over axes {} of {} [N, {}]; zoc averages images over H and "
        "W (axes [2, 3]), and the channels of a channels-last view as "
        "part of a LayerNormalization",
        axes.empty() ? "all" : list_str(axes), view_name(v.view), fmt::join(shown, ", ")));
  }
  auto pooled = c.emit(ir::OpKind::GlobalAvgPool, {v.id}, {});
  if (!pooled || keepdims) return pooled && c.result_activation(*pooled);
  auto flat = c.emit(ir::OpKind::Flatten, {*pooled}, {});
  return flat && c.result_activation(*flat);
}

// Channels [start, start + count) of image x, as torch.chunk's pieces: all of them is x itself.
std::optional<ir::ValueId> channels_of(NodeContext& c, ir::ValueId x, int64_t channels,
                                       int64_t start, int64_t count) {
  if (start == 0 && count == channels) return x;
  ir::Attrs a;
  a.set("start", int_attr(start));
  a.set("count", int_attr(count));
  return c.emit(ir::OpKind::SliceChannels, {x}, a);
}

// Integer input i (or attribute `name` below `since`) of Slice; `dflt` when omitted.
std::optional<std::vector<int64_t>> slice_arg(NodeContext& c, size_t i, const char* name, int since,
                                              std::vector<int64_t> dflt) {
  if (c.opset() < since) {
    if (!c.attr(name, dflt)) return std::nullopt;
    return dflt;
  }
  if (!c.has_input(i)) return dflt;
  const Val* v = c.constant(i, name);
  if (!v) return std::nullopt;
  if (v->constant->floating) {
    c.fail(fmt::format("its {} are floating-point", name));
    return std::nullopt;
  }
  return v->constant->i;
}

// Slice(x, starts, ends, axes, steps) along the channels of an image, with step 1.
bool slice(NodeContext& c) {
  auto x = c.activation(0);
  const std::vector<int64_t>* d = x ? c.dims(*x) : nullptr;
  auto starts = d ? slice_arg(c, 1, "starts", 10, {}) : std::nullopt;
  auto ends = starts ? slice_arg(c, 2, "ends", 10, {}) : std::nullopt;
  auto axes = ends ? slice_arg(c, 3, "axes", 10, {}) : std::nullopt;
  auto steps = axes ? slice_arg(c, 4, "steps", 10, {}) : std::nullopt;
  if (!steps) return false;
  if (axes->empty()) {
    for (size_t k = 0; k < starts->size(); ++k) axes->push_back(static_cast<int64_t>(k));
  }
  const auto axis = normalized_axes(*axes, static_cast<int64_t>(d->size()) + 1);
  const bool unit_steps =
      std::all_of(steps->begin(), steps->end(), [](int64_t s) { return s == 1; });
  if (d->size() != 3 || axis != std::vector<int64_t>{1} || starts->size() != 1 ||
      ends->size() != 1 || !unit_steps) {
    return c.fail(fmt::format(
        "a slice along axes {}{} of [N, {}]; zoc slices images along the "
        "channels (axis 1) with step 1",
        list_str(*axes), unit_steps ? "" : " with steps " + list_str(*steps), fmt::join(*d, ", ")));
  }
  const int64_t channels = (*d)[0];
  auto clamp = [&](int64_t v) {
    return std::clamp(v < 0 ? v + channels : v, int64_t{0}, channels);
  };
  const int64_t start = clamp((*starts)[0]), end = clamp((*ends)[0]);
  if (end <= start) return c.fail(fmt::format("an empty slice of the {} channels", channels));
  auto y = channels_of(c, *x, channels, start, end - start);
  return y && c.result_activation(*y);
}

// The sizes of Split-18's num_outputs parts of `total`: equal, or, where they cannot be, each
// total / n + 1 and the last smaller (ONNX's rule; torch.chunk's too); empty if the last would be
// empty.
std::vector<int64_t> split_parts(int64_t total, int64_t n) {
  const int64_t part = total % n == 0 ? total / n : total / n + 1;
  const int64_t last = total - part * (n - 1);
  if (last < 1) return {};
  std::vector<int64_t> out(static_cast<size_t>(n - 1), part);
  out.push_back(last);
  return out;
}

// Split(x, split) along the channels: one slice_channels per output read. Without sizes the
// parts are equal; from opset 18 num_outputs may give their number instead (the last part may be
// smaller).
bool split(NodeContext& c) {
  auto x = c.activation(0);
  const std::vector<int64_t>* d = x ? c.dims(*x) : nullptr;
  int64_t axis = 0, num_outputs = 0;
  if (!d || !c.attr("axis", axis) || !c.attr("num_outputs", num_outputs)) return false;
  auto sizes = slice_arg(c, 1, "split", 13, {});
  if (!sizes) return false;
  const int64_t outputs = c.node().output_size();
  if (c.has_attr("num_outputs") && (c.has_input(1) || num_outputs != outputs)) {
    return c.fail(c.has_input(1)
                      ? std::string("both a split input and num_outputs (ONNX allows one)")
                      : fmt::format("num_outputs {} for {} outputs", num_outputs, outputs));
  }
  const auto a = normalized_axes({axis}, static_cast<int64_t>(d->size()) + 1);
  if (d->size() != 3 || a != std::vector<int64_t>{1}) {
    return c.fail(
        fmt::format("a split along axis {} of [N, {}]; zoc splits images along the "
                    "channels",
                    axis, fmt::join(*d, ", ")));
  }
  const int64_t channels = (*d)[0];
  if (sizes->empty() && c.has_attr("num_outputs")) {
    *sizes = split_parts(channels, num_outputs);
    if (sizes->empty()) {
      return c.fail(fmt::format("{} channels in {} parts of {} leave the last part empty", channels,
                                num_outputs, channels / num_outputs + 1));
    }
  } else if (sizes->empty()) {
    if (channels % outputs != 0) {
      return c.fail(fmt::format("{} channels do not split into {} equal parts", channels, outputs));
    }
    sizes->assign(static_cast<size_t>(outputs), channels / outputs);
  }
  int64_t total = 0;
  for (int64_t s : *sizes) total += (s < 1 || s > channels) ? channels + 1 : s;
  if (static_cast<int64_t>(sizes->size()) != outputs || total != channels) {
    return c.fail(fmt::format("split sizes {} for {} outputs of {} channels", list_str(*sizes),
                              outputs, channels));
  }
  int64_t start = 0;
  for (size_t k = 0; k < sizes->size(); start += (*sizes)[k], ++k) {
    if (!c.output_used(k)) continue;
    auto y = channels_of(c, *x, channels, start, (*sizes)[k]);
    if (!y) return false;
    c.result_at(k, Val::activation(*y));
  }
  return true;
}

// Transpose into and out of the views: an image's perm [0, 2, 3, 1] is its channels-last view
// and [0, 3, 1, 2] of that view the image again; perm [0, 2, 1, 3, 4] swaps the two channel
// axes of ShuffleNet's grouped view.
bool transpose(NodeContext& c) {
  const Val* x = c.viewed(0);
  std::vector<int64_t> perm;
  if (!x || !c.attr("perm", perm)) return false;
  const Val v = *x;
  const std::vector<int64_t>* d = c.dims(v.id);
  if (!d) return false;
  const std::vector<int64_t> shown = viewed_dims(v, *d);
  std::vector<int64_t> identity(shown.size() + 1);
  for (size_t k = 0; k < identity.size(); ++k) identity[k] = static_cast<int64_t>(k);
  const bool image = d->size() == 3;
  if (perm == identity) {
    c.result(v);
    return true;
  }
  if (image && v.view == View::kNone && perm == std::vector<int64_t>{0, 2, 3, 1}) {
    return c.result_like(v.id, Val::activation(v.id, View::kChannelsLast));
  }
  if (v.view == View::kChannelsLast && perm == std::vector<int64_t>{0, 3, 1, 2}) {
    return c.result_activation(v.id);
  }
  const bool swaps_groups = perm == std::vector<int64_t>{0, 2, 1, 3, 4};
  if (swaps_groups && (v.view == View::kGrouped || v.view == View::kGroupedTransposed)) {
    c.result(Val::activation(
        v.id, v.view == View::kGrouped ? View::kGroupedTransposed : View::kGrouped, v.groups));
    return true;
  }
  return c.fail(
      fmt::format("a transpose {} of {} [N, {}]; zoc follows an image's perm [0, 2, 3, "
                  "1] to channels-last and [0, 3, 1, 2] back, and the perm [0, 2, 1, "
                  "3, 4] of ShuffleNet's channel shuffle",
                  list_str(perm), view_name(v.view), fmt::join(shown, ", ")));
}

// Pad-18's pads for the axes its axes input lists ([a_begin..., a_end...]) as pads for every
// axis of a rank-`rank` tensor, in place; false after a failure.
bool pads_over_axes(NodeContext& c, std::vector<int64_t>& pads, int64_t rank) {
  const Val* a = c.constant(3, "axes");
  if (!a) return false;
  const std::vector<int64_t>& axes = a->constant->i;
  const size_t n = axes.size(), r = static_cast<size_t>(rank);
  std::vector<int64_t> full(2 * r, 0);
  std::vector<bool> seen(r, false);
  for (size_t k = 0; k < n; ++k) {
    const int64_t axis = axes[k] < 0 ? axes[k] + rank : axes[k];
    if (a->constant->floating || pads.size() != 2 * n || axis < 0 || axis >= rank ||
        seen[static_cast<size_t>(axis)]) {
      return c.fail(
          fmt::format("pads {} over axes {} of a rank-{} tensor: ONNX gives a begin and "
                      "an end for each of its distinct axes",
                      list_str(pads), list_str(axes), rank));
    }
    seen[static_cast<size_t>(axis)] = true;
    full[static_cast<size_t>(axis)] = pads[k];
    full[static_cast<size_t>(axis) + r] = pads[k + n];
  }
  pads = full;
  return true;
}

}  // namespace

std::optional<ir::ValueId> emit_pad(NodeContext& c, ir::ValueId x, const std::vector<int64_t>& tlbr,
                                    double value) {
  ir::Attrs a;
  a.set("top", int_attr(tlbr[0]));
  a.set("left", int_attr(tlbr[1]));
  a.set("bottom", int_attr(tlbr[2]));
  a.set("right", int_attr(tlbr[3]));
  a.set("value", float_attr(value));
  return c.emit(ir::OpKind::Pad, {x}, a);
}

namespace {

// Pad(x, pads, value) of an image's H and W with a constant. Zeros alike on both sides stay a
// step (Partial::kPadded) that an AveragePool after it takes as its padding (PyTorch's
// count_include_pad=True), and any other reader as a pad node (decomposed_step); other pads
// are a pad node now. Opset 11 moved pads and the value from attributes to inputs; opset 18
// added axes, which pads then cover.
bool pad(NodeContext& c) {
  auto x = c.activation(0);
  std::string mode = "constant";
  std::vector<int64_t> pads;
  double value = 0;
  if (!x || !c.attr("mode", mode)) return false;
  if (c.opset() < 11) {
    if (!c.attr("pads", pads) || !c.attr("value", value)) return false;
  } else {
    const Val* p = c.constant(1, "pads");
    if (!p) return false;
    pads = p->constant->i;
    if (c.has_input(2)) {
      auto v = c.scalar(2, "constant_value");
      if (!v) return false;
      value = *v;
    }
    const std::vector<int64_t>* d = c.has_input(3) ? c.dims(*x) : nullptr;
    if (c.has_input(3) && (!d || !pads_over_axes(c, pads, static_cast<int64_t>(d->size()) + 1))) {
      return false;
    }
  }
  if (mode != "constant") {
    return c.fail(fmt::format("mode '{}'; zoc pads with a constant", shown_text(mode)));
  }
  const bool image_hw =
      pads.size() == 8 && pads[0] == 0 && pads[1] == 0 && pads[4] == 0 && pads[5] == 0 &&
      std::all_of(pads.begin(), pads.end(), [](int64_t v) { return v >= 0 && v <= (1 << 12); });
  if (!image_hw) {
    return c.fail(fmt::format("pads {}: zoc pads an image's H and W (by 0 to 4096 on each side)",
                              list_str(pads)));
  }
  if (value == 0 && pads[2] == pads[6] && pads[3] == pads[7]) {
    Partial p{Partial::Step::kPadded, Val::activation(*x)};
    p.pad = {pads[2], pads[3]};
    return c.result_partial(std::move(p));
  }
  auto y = emit_pad(c, *x, {pads[2], pads[3], pads[6], pads[7]}, value);
  return y && c.result_activation(*y);
}

// LayerNormalization(X, Scale, B) over the last axis: the channels of a channels-last view
// (ConvNeXt's LayerNorm2d and its blocks' norms) or the features of [N, F].
bool layer_normalization(NodeContext& c) {
  const Val* x = c.viewed(0);
  int64_t axis = -1, stash_type = 1;
  double eps = 1e-5;
  if (!x || !c.attr("axis", axis) || !c.attr("epsilon", eps) || !c.attr("stash_type", stash_type)) {
    return false;
  }
  const Val v = *x;
  if (c.output_used(1) || c.output_used(2)) return c.fail("its Mean or InvStdDev output is used");
  if (!c.has_input(2)) return c.fail("no bias B: zoc's layernorm has one");
  const Val* w = c.constant(1, "scale");
  const Val* b = w ? c.constant(2, "bias") : nullptr;
  if (!b) return false;
  return emit_layer_norm(c, v, axis, eps, {"weight", w->constant, w->name, false}, *b);
}

}  // namespace

std::optional<ReduceAxes> reduce_axes(NodeContext& c) {
  ReduceAxes out;
  int64_t noop = 0;
  if (c.opset() < 18) {
    if (!c.attr("axes", out.axes)) return std::nullopt;
  } else {
    if (!c.attr("noop_with_empty_axes", noop)) return std::nullopt;
    if (c.has_input(1)) {
      const Val* a = c.constant(1, "axes");
      if (!a) return std::nullopt;
      if (a->constant->floating) {
        c.fail("its axes are floating-point");
        return std::nullopt;
      }
      out.axes = a->constant->i;
    }
  }
  out.identity = out.axes.empty() && noop != 0;
  return out;
}

bool emit_layer_norm(NodeContext& c, const Val& x, int64_t axis, double eps, ParamBinding weight,
                     const Val& bias) {
  const std::vector<int64_t>* d = c.dims(x.id);
  if (!d) return false;
  const std::vector<int64_t> shown = viewed_dims(x, *d);
  const int64_t rank = static_cast<int64_t>(shown.size()) + 1;
  const int64_t last = axis < 0 ? axis + rank : axis;
  const bool over_channels = x.view == View::kChannelsLast && last == 3;
  const bool over_features = x.view == View::kNone && d->size() == 1 && last == 1;
  if (!over_channels && !over_features) {
    return c.fail(
        fmt::format("a layer normalization from axis {} of {} [N, {}]; zoc normalizes "
                    "the channels of a channels-last image (Transpose perm [0, 2, 3, "
                    "1]) or the features of [N, F]",
                    axis, view_name(x.view), fmt::join(shown, ", ")));
  }
  const int64_t n = (*d)[0];
  for (const Constant* p : {weight.value.get(), bias.constant.get()}) {
    if (!p->floating || p->dims != std::vector<int64_t>{n}) {
      return c.fail(fmt::format(
          "its scale or bias '{}' has shape {}, where zoc's layernorm takes "
          "one value per channel ([{}])",
          shown_text(p == weight.value.get() ? weight.seen_as : bias.name), list_str(p->dims), n));
    }
  }
  ir::Attrs a;
  a.set("eps", float_attr(eps));
  auto y = c.emit(ir::OpKind::LayerNorm, {x.id}, a,
                  {std::move(weight), {"bias", bias.constant, bias.name, false}});
  return y && c.result_like(*y, x);
}

// y = x W + b over the channels of each pixel: a 1x1 convolution of the image whose weight keeps
// the linear layer's [O, C] shape (weight_2d), from ONNX's [C, O] (a following Add of the bias
// joins it, ops_tensor.cpp).
bool pixel_linear(NodeContext& c, const Val& x, const Val& w) {
  const std::vector<int64_t>* d = c.dims(x.id);
  if (!d) return false;
  const std::vector<int64_t>& wd = w.constant->dims;
  if (d->size() != 3 || wd[0] != (*d)[0]) {
    return c.fail(fmt::format("a matrix product of {} [N, {}] by '{}' of shape {}",
                              view_name(x.view), fmt::join(viewed_dims(x, *d), ", "),
                              shown_text(w.name), list_str(wd)));
  }
  ir::Attrs a;
  a.set("out_channels", int_attr(wd[1]));
  a.set("kernel", pair_attr({1, 1}));
  a.set("bias", bool_attr(false));
  a.set("weight_2d", bool_attr(true));
  auto y = c.emit(ir::OpKind::Conv2d, {x.id}, a, {{"weight", w.constant, w.name, true}});
  return y && c.result_like(*y, x);
}

// Reshape of an image to ShuffleNet's [N, g, C/g, H, W] and back: to [N, C, H, W] from the
// transposed grouped view it is a channel_shuffle of g groups, from the plain one the image.
// `to` holds the batch as kBatchDim, 0 for "as the input", at most one -1.
bool reshape_view(NodeContext& c, const std::vector<int64_t>& to) {
  const Val v = c.in(0);
  const std::vector<int64_t>* d = c.dims(v.id);
  if (!d) return false;
  const std::vector<int64_t> from = viewed_dims(v, *d);
  std::vector<int64_t> s = to;
  const std::optional<int64_t> batch = c.declared_batch();
  const bool batch_first =
      !s.empty() && (s[0] == kBatchDim || s[0] == 0 || (batch && s[0] == *batch));
  int64_t known = 1, unknown = 0, numel = 1;
  for (int64_t x : from) numel *= x;
  for (size_t k = 1; k < s.size(); ++k) {
    if (s[k] == 0 && k - 1 < from.size()) s[k] = from[k - 1];
    if (s[k] == -1) {
      ++unknown;
    } else if (s[k] < 1 || s[k] > numel) {
      unknown = 2;
    } else {
      known *= s[k];
    }
  }
  const bool resolved = batch_first && unknown <= 1 && d->size() == 3 && numel % known == 0 &&
                        (unknown == 1 || known == numel);
  for (size_t k = 1; resolved && k < s.size(); ++k) {
    if (s[k] == -1) s[k] = numel / known;
  }
  if (resolved && v.view == View::kNone && s.size() == 5 && s[3] == (*d)[1] && s[4] == (*d)[2] &&
      s[1] * s[2] == (*d)[0]) {
    c.result(Val::activation(v.id, View::kGrouped, s[1]));
    return true;
  }
  const bool to_image =
      resolved && s.size() == 4 && s[1] == (*d)[0] && s[2] == (*d)[1] && s[3] == (*d)[2];
  if (to_image && v.view == View::kGrouped) return c.result_activation(v.id);
  if (to_image && v.view == View::kGroupedTransposed) {
    ir::Attrs a;
    a.set("groups", int_attr(v.groups));
    auto y = c.emit(ir::OpKind::ChannelShuffle, {v.id}, a);
    return y && c.result_activation(*y);
  }
  return c.fail(
      fmt::format("a reshape of {} [N, {}] to {}; zoc follows ShuffleNet's channel "
                  "shuffle (an image to [N, g, C/g, H, W], Transpose perm [0, 2, 1, 3, "
                  "4], back to [N, C, H, W]) and flattens to [N, features]",
                  view_name(v.view), fmt::join(from, ", "), target_str(to)));
}

namespace {

const OpEntry kZooOps[] = {
    {"Mul", mul},
    {"HardSigmoid", hard_sigmoid},
    {"ReduceMean", reduce_mean},
    {"Slice", slice},
    {"Split", split},
    {"Transpose", transpose},
    {"Pad", pad},
    {"LayerNormalization", layer_normalization},
};

}  // namespace

std::span<const OpEntry> zoo_ops() { return kZooOps; }

}  // namespace zoc::onnx::detail
