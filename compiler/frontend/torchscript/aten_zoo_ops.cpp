// The ATen ops of the classic CNN zoo beyond ResNet (issue 20), each mapped as torchvision
// writes it:
//   - aten::mul: squeeze-and-excitation's `scale * x` (MobileNetV3, EfficientNet, RegNetY) as a
//     `mul` with the broadcast channel vector second, and ConvNeXt's `layer_scale * x` as a
//     `layer_scale` layer named after the block that owns the parameter;
//   - aten::mean over H and W (ShuffleNetV2, MNASNet) as global pooling (+ flatten);
//   - aten::chunk / prim::ConstantChunk along channels (ShuffleNetV2) as slice_channels;
//   - aten::layer_norm and aten::linear on ConvNeXt's channels-last permutation, which zoc
//     follows as a view of the NCHW image (internal.h, Val::View): the norm runs over the
//     channels of each pixel, the linear layer is a 1x1 convolution keeping its [O, C] weight;
//   - ShuffleNetV2's channel shuffle, x.view(n, g, c / g, h, w).transpose(1, 2).contiguous()
//     .view(n, c, h, w), followed as a 5-D view and written as one channel_shuffle.
// Views are small on purpose: the handlers here accept exactly these sequences, and every other
// use of a view is unsupported with the view named (OpContext::tensor).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "compiler/frontend/torchscript/internal.h"
#include "compiler/ir/shapes.h"

namespace zoc::torchscript::detail {

using Kind = Val::Kind;
using View = Val::View;

// A number known now: a Python scalar or a one-element constant tensor (also read by
// aten_dense_ops.cpp).
std::optional<double> constant_scalar(const Val& v) {
  if (!v.is(Kind::kConst)) return std::nullopt;
  if (v.value.isDouble()) return v.value.toDouble();
  if (v.value.isInt()) return static_cast<double>(v.value.toInt());
  if (v.value.isTensor() && v.value.toTensor().numel() == 1) {
    return v.value.toTensor().item<double>();
  }
  return std::nullopt;
}

namespace {

std::string list_str(const std::vector<int64_t>& v) {
  std::vector<std::string> items;
  for (int64_t x : v) items.push_back(x == OpContext::kBatchDim ? "N" : std::to_string(x));
  return fmt::format("[{}]", fmt::join(items, ", "));
}

// Dimensions `dims` of a rank-`rank` tensor made non-negative; nullopt if one is outside.
std::optional<std::vector<int64_t>> normalized_dims(std::vector<int64_t> dims, int64_t rank) {
  for (int64_t& d : dims) {
    if (d < -rank || d >= rank) return std::nullopt;
    if (d < 0) d += rank;
  }
  return dims;
}

// x * gamma with gamma the parameter `<layer>.layer_scale` of shape [C, 1, 1].
bool layer_scale(OpContext& c, size_t activation, const Val& gamma) {
  auto x = c.tensor(activation);
  const std::vector<int64_t>* d = x ? c.dims(*x) : nullptr;
  if (!d) return false;
  const std::vector<int64_t> shape(gamma.tensor.sizes().begin(), gamma.tensor.sizes().end());
  if (d->size() != 3 || shape != std::vector<int64_t>{(*d)[0], 1, 1}) {
    return c.fail(
        fmt::format("multiplying an activation [N, {}] by parameter '{}' of shape {}; "
                    "zoc multiplies an image by a per-channel [C, 1, 1] parameter",
                    fmt::join(*d, ", "), gamma.name, list_str(shape)));
  }
  auto layer = c.layer_of(gamma, "layer_scale");
  auto y = layer ? c.emit(ir::OpKind::LayerScale, {*x}, {}, &*layer) : std::nullopt;
  return y && c.result_tensor(*y);
}

// aten::mul(self, other) and mul_: two activations of one shape, or an image and its channel
// vector (either order: the IR takes the vector second), an activation and a layer_scale
// parameter, or an activation and the constant 1.
bool mul(OpContext& c) {
  const Val &a = c.in(0), &b = c.in(1);
  for (size_t k : {0, 1}) {
    if (auto s = constant_scalar(c.in(k))) {
      if (*s != 1.0) {
        return c.fail(
            fmt::format("multiplying by the constant {:g}; zoc multiplies two "
                        "activations, or an activation by a layer_scale parameter",
                        *s));
      }
      auto x = c.tensor(1 - k);
      return x && c.result_tensor(*x);
    }
  }
  if (a.is(Kind::kParam) && b.is(Kind::kTensor)) return layer_scale(c, 1, a);
  if (b.is(Kind::kParam) && a.is(Kind::kTensor)) return layer_scale(c, 0, b);
  auto x = c.tensor(0);
  auto y = x ? c.tensor(1) : std::nullopt;
  const std::vector<int64_t>* dx = y ? c.dims(*x) : nullptr;
  const std::vector<int64_t>* dy = dx ? c.dims(*y) : nullptr;
  if (!dy) return false;
  const Expected<bool> swap = ir::mul_swaps_operands(*dx, *dy);
  if (!swap) return c.fail(swap.error().message);
  auto z = c.emit(ir::OpKind::Mul, *swap ? std::vector{*y, *x} : std::vector{*x, *y}, {});
  return z && c.result_tensor(*z);
}

// aten::mean(self, dim, keepdim, dtype) over H and W of an image: global pooling, then a
// flatten to [N, C] unless keepdim.
bool mean(OpContext& c) {
  if (c.num_inputs() < 4) return c.fail("a mean over every element; zoc averages over H and W");
  auto x = c.tensor(0);
  auto dims = x ? c.ints(1) : std::nullopt;
  auto keep = dims ? c.b(2) : std::nullopt;
  const std::vector<int64_t>* d = keep ? c.dims(*x) : nullptr;
  if (!d) return false;
  if (!c.none(3)) return c.fail("a dtype argument");
  auto axes = normalized_dims(*dims, static_cast<int64_t>(d->size()) + 1);
  if (axes) std::sort(axes->begin(), axes->end());
  if (d->size() != 3 || axes != std::vector<int64_t>{2, 3}) {
    return c.fail(
        fmt::format("a mean over dims {} of [N, {}]; zoc averages images over H and W "
                    "(dims [2, 3])",
                    list_str(*dims), fmt::join(*d, ", ")));
  }
  auto pooled = c.emit(ir::OpKind::GlobalAvgPool, {*x}, {});
  if (!pooled || *keep) return pooled && c.result_tensor(*pooled);
  auto flat = c.emit(ir::OpKind::Flatten, {*pooled}, {});
  return flat && c.result_tensor(*flat);
}

// torch.chunk along the channels: pieces of ceil(C / chunks) channels, the last one smaller, and
// fewer pieces than asked where they run out (PyTorch's rule), each a slice_channels.
std::optional<std::vector<ir::ValueId>> channel_chunks(OpContext& c, int64_t chunks, int64_t dim) {
  auto x = c.tensor(0);
  const std::vector<int64_t>* d = x ? c.dims(*x) : nullptr;
  if (!d) return std::nullopt;
  const auto axis = normalized_dims({dim}, static_cast<int64_t>(d->size()) + 1);
  if (d->size() != 3 || !axis || (*axis)[0] != 1 || chunks < 1) {
    c.fail(fmt::format("chunk({}, dim={}) of [N, {}]; zoc splits images along the channels", chunks,
                       dim, fmt::join(*d, ", ")));
    return std::nullopt;
  }
  const int64_t channels = (*d)[0], size = (channels + chunks - 1) / chunks;
  if (size == channels) return std::vector<ir::ValueId>{*x};
  std::vector<ir::ValueId> pieces;
  for (int64_t start = 0; start < channels; start += size) {
    ir::Attrs a;
    a.set("start", int_attr(start));
    a.set("count", int_attr(std::min(size, channels - start)));
    auto piece = c.emit(ir::OpKind::SliceChannels, {*x}, a);
    if (!piece) return std::nullopt;
    pieces.push_back(*piece);
  }
  return pieces;
}

// aten::chunk(self, chunks, dim) -> Tensor[]
bool chunk(OpContext& c) {
  auto chunks = c.i(1);
  auto dim = chunks ? c.i(2) : std::nullopt;
  auto pieces = dim ? channel_chunks(c, *chunks, *dim) : std::nullopt;
  if (!pieces) return false;
  Val list;
  list.kind = Kind::kList;
  for (ir::ValueId v : *pieces) list.items.push_back(Val::activation(v));
  c.result(std::move(list));
  return true;
}

// prim::ConstantChunk[chunks, dim](self): the same, one output per piece.
bool constant_chunk(OpContext& c) {
  jit::Node* n = c.node();
  auto pieces = channel_chunks(c, n->i(jit::attr::chunks), n->i(jit::attr::dim));
  if (!pieces) return false;
  if (pieces->size() != n->outputs().size()) {
    return c.fail(
        fmt::format("{} pieces where TorchScript expects {}", pieces->size(), n->outputs().size()));
  }
  for (size_t k = 0; k < pieces->size(); ++k) c.result(Val::activation((*pieces)[k]), k);
  return true;
}

// aten::layer_norm(input, normalized_shape, weight, bias, eps, cudnn_enable): over C of a
// channels-last image (ConvNeXt's LayerNorm2d and CNBlock's norm), or over F of [N, F].
bool layer_norm(OpContext& c) {
  const Val* x = c.activation(0);
  auto shape = x ? c.ints(1) : std::nullopt;
  auto eps = shape ? c.f(4) : std::nullopt;
  if (!eps) return false;
  const Val v = *x;
  const std::vector<int64_t>* d = c.dims(v.id);
  if (!d) return false;
  const bool over_channels = v.view == View::kChannelsLast && *shape == std::vector{(*d)[0]};
  const bool over_features = v.view == View::kNone && d->size() == 1 && *shape == *d;
  if (!over_channels && !over_features) {
    return c.fail(
        fmt::format("layer_norm over {} of {} [N, {}]; zoc normalizes the channels of "
                    "a channels-last image (x.permute(0, 2, 3, 1)) or the features of "
                    "[N, F]",
                    list_str(*shape), view_name(v.view), fmt::join(viewed_dims(v, *d), ", ")));
  }
  if (c.none(2) || c.none(3)) return c.fail("layer_norm without weight and bias");
  const Val* w = c.param(2);
  auto layer = w ? c.layer_of(*w, "weight") : std::nullopt;
  auto bias = layer ? c.optional_param(3, *layer, "bias") : std::nullopt;
  if (!bias) return false;
  ir::Attrs a;
  a.set("eps", float_attr(*eps));
  auto y = c.emit(ir::OpKind::LayerNorm, {v.id}, a, &*layer);
  return y && c.result_like(*y, v);
}

// The channels of [N, g, C/g, H, W] (or [N, C, H, W]) from a view's shape: the batch first,
// at most one -1, the rest matching `dims` [C, H, W].
std::optional<std::vector<int64_t>> resolved_shape(std::vector<int64_t> shape,
                                                   const std::vector<int64_t>& dims) {
  if (shape.empty() || (shape[0] != OpContext::kBatchDim && shape[0] != -1)) return std::nullopt;
  int64_t known = 1, unknown = 0;
  for (size_t k = 1; k < shape.size(); ++k) {
    if (shape[k] == -1) {
      ++unknown;
    } else if (shape[k] < 1) {
      return std::nullopt;
    } else {
      known *= shape[k];
    }
  }
  const int64_t numel = dims[0] * dims[1] * dims[2];
  if (unknown > 1 || known < 1 || numel % known != 0 || (unknown == 0 && known != numel)) {
    return std::nullopt;
  }
  for (size_t k = 1; k < shape.size(); ++k) {
    if (shape[k] == -1) shape[k] = numel / known;
  }
  shape[0] = OpContext::kBatchDim;
  return shape;
}

}  // namespace

// x.permute(0, 2, 3, 1) of an image is its channels-last view; permute(0, 3, 1, 2) of that view
// is the image again.
bool permute_activation(OpContext& c) {
  const Val* x = c.activation(0);
  auto perm = x ? c.ints(1) : std::nullopt;
  if (!perm) return false;
  const Val v = *x;
  const std::vector<int64_t>* d = c.dims(v.id);
  if (!d) return false;
  const auto p = normalized_dims(*perm, static_cast<int64_t>(viewed_dims(v, *d).size()) + 1);
  if (p == std::vector<int64_t>{0, 1, 2, 3} && d->size() == 3) {
    c.result(v);
    return true;
  }
  if (v.view == View::kNone && d->size() == 3 && p == std::vector<int64_t>{0, 2, 3, 1}) {
    c.result(v.viewed(View::kChannelsLast));
    return true;
  }
  if (v.view == View::kChannelsLast && p == std::vector<int64_t>{0, 3, 1, 2}) {
    c.result(v.viewed(View::kNone));
    return true;
  }
  return c.fail(
      fmt::format("permute{} of {} [N, {}]; zoc follows an image's permute(0, 2, 3, 1) "
                  "to channels-last and permute(0, 3, 1, 2) back",
                  list_str(*perm), view_name(v.view), fmt::join(viewed_dims(v, *d), ", ")));
}

// transpose(1, 2) of ShuffleNet's [N, g, C/g, H, W] view, and back.
bool transpose_activation(OpContext& c) {
  const Val* x = c.activation(0);
  auto d0 = x ? c.i(1) : std::nullopt;
  auto d1 = d0 ? c.i(2) : std::nullopt;
  if (!d1) return false;
  const Val v = *x;
  const auto dims = normalized_dims({*d0, *d1}, 5);
  const bool swaps_groups =
      dims && std::min((*dims)[0], (*dims)[1]) == 1 && std::max((*dims)[0], (*dims)[1]) == 2;
  if (swaps_groups && v.view == View::kGrouped) {
    c.result(v.viewed(View::kGroupedTransposed, v.groups));
    return true;
  }
  if (swaps_groups && v.view == View::kGroupedTransposed) {
    c.result(v.viewed(View::kGrouped, v.groups));
    return true;
  }
  return c.fail(
      fmt::format("transpose({}, {}) of {}; zoc follows the transpose(1, 2) of "
                  "ShuffleNet's channel shuffle",
                  *d0, *d1, view_name(v.view)));
}

// view/reshape into and out of the channel shuffle's 5-D view: [N, g, C/g, H, W] from an image,
// [N, C, H, W] from the transposed view (a channel_shuffle of g groups) or the plain one (the
// image itself).
bool view_activation(OpContext& c, const Val& x, const std::vector<int64_t>& shape) {
  const std::vector<int64_t>* d = c.dims(x.id);
  if (!d) return false;
  const Val v = x;
  const auto s = d->size() == 3 ? resolved_shape(shape, *d) : std::nullopt;
  if (s && v.view == View::kNone && s->size() == 5 && (*s)[3] == (*d)[1] && (*s)[4] == (*d)[2]) {
    c.result(v.viewed(View::kGrouped, (*s)[1]));
    return true;
  }
  const bool to_image =
      s && *s == std::vector<int64_t>{OpContext::kBatchDim, (*d)[0], (*d)[1], (*d)[2]};
  if (to_image && v.view == View::kGrouped) {
    c.result(v.viewed(View::kNone));
    return true;
  }
  if (to_image && v.view == View::kGroupedTransposed) {
    ir::Attrs a;
    a.set("groups", int_attr(v.groups));
    auto y = c.emit(ir::OpKind::ChannelShuffle, {v.id}, a);
    return y && c.result_tensor(*y);
  }
  return c.fail(
      fmt::format("a view of {} [N, {}] as {}; zoc follows ShuffleNet's channel "
                  "shuffle (view as [N, g, C/g, H, W], transpose(1, 2), view back)",
                  view_name(v.view), fmt::join(viewed_dims(v, *d), ", "), list_str(shape)));
}

// y = x W^T + b over the channels of each pixel: a 1x1 convolution of the image whose weight
// keeps the linear's [O, C] shape (weight_2d), so the state_dict loads unchanged.
bool pixel_linear(OpContext& c, const Val& x, const Val& w) {
  const Val v = x;
  if (w.tensor.dim() != 2 || w.transposed) {
    return c.fail(fmt::format("'{}' is not used as a linear layer's [out, in] weight", w.name));
  }
  auto layer = c.layer_of(w, "weight");
  auto bias = layer ? c.optional_param(2, *layer, "bias") : std::nullopt;
  if (!bias) return false;
  ir::Attrs a;
  a.set("out_channels", int_attr(w.tensor.size(0)));
  a.set("kernel", pair_attr({1, 1}));
  a.set("bias", bool_attr(*bias));
  a.set("weight_2d", bool_attr(true));
  auto y = c.emit(ir::OpKind::Conv2d, {v.id}, a, &*layer);
  return y && c.result_like(*y, v);
}

const std::map<std::string, Handler>& zoo_handlers() {
  static const std::map<std::string, Handler> table = {
      {"aten::mul", mul},
      {"aten::mul_", mul},
      {"aten::mean", mean},
      {"aten::chunk", chunk},
      {"prim::ConstantChunk", constant_chunk},
      {"aten::layer_norm", layer_norm},
  };
  return table;
}

}  // namespace zoc::torchscript::detail
