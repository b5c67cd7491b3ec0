// Split attention over a radix (issue 36: timm's ResNeSt SplitAttn and SKNet's SelectiveKernel)
// through ONNX, as both exporters (dynamo and TorchScript-based opset 17) write it:
//   ResNeSt:  Reshape x to [N, R, C, H, W] -> ReduceSum axes [1] -> ... -> Conv (fc2)
//             -> Reshape [N, G, R, -1] -> Transpose perm [0, 2, 1, 3] -> Softmax axis 1
//             -> Reshape [N, R, C, 1, 1] (or [N, -1], [N, -1, 1, 1], then that)
//             -> Mul(x, .) -> ReduceSum axes [1]
//   SKNet:    Unsqueeze axes [1] of each path -> Concat axis 1 -> ReduceSum axes [1] -> ...
//             -> Conv (fc_select) -> Reshape [N, R, C, 1, 1] -> Softmax axis 1 -> Mul -> ReduceSum
// [N, R, C, H, W] is the grouped view of the image [N, R*C, H, W] (View::kGrouped, ShuffleNet's),
// an Unsqueeze at axis 1 of an image is that view with R = 1, and a Concat along axis 1 of such
// views is the concat of their images. The sum and the softmax over axis 1 of the view, and a
// Mul of two views, are channel arithmetic on the images (compiler/frontend/radix_lowering.h).
// The 4-D [N, G, R, K] is the image [G, R, K] itself (a reshape) and its Transpose is
// radix_lowering's swap of channels and rows. Every other use of these op types goes to
// eca_handler (ops_eca.cpp's, then the other tables); ReduceSum has no other handler, so
// anything else is refused here, naming what zoc maps.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "compiler/frontend/onnx/internal.h"
#include "compiler/frontend/radix_lowering.h"
#include "compiler/ir/shapes.h"

namespace zoc::onnx::detail {
namespace {

using Kind = Val::Kind;
using View = Val::View;

bool next(NodeContext& c) {
  Handler h = eca_handler(c.node().op_type());
  return h ? h(c) : c.fail("no handler");
}

struct Emitter {
  NodeContext& c;
  std::optional<ir::ValueId> operator()(ir::OpKind op, std::vector<ir::ValueId> in, ir::Attrs a) {
    return c.emit(op, std::move(in), std::move(a));
  }
};

bool grouped(const Val& v) { return v.is(Kind::kActivation) && v.view == View::kGrouped; }
bool plain(const Val& v) { return v.is(Kind::kActivation) && v.view == View::kNone; }

// The axes of a reduction or Unsqueeze: the `axes` attribute before opset `input_from`, input 1
// from then on; nullopt after a failure.
std::optional<std::vector<int64_t>> axes_of(NodeContext& c, int64_t input_from) {
  std::vector<int64_t> axes;
  if (c.opset() < input_from) {
    if (!c.attr("axes", axes)) return std::nullopt;
  } else if (c.has_input(1)) {
    const Val* a = c.constant(1, "axes");
    if (!a) return std::nullopt;
    axes = a->constant->i;
  }
  return axes;
}

bool is_axis1(const std::vector<int64_t>& axes, int64_t rank) {
  return axes.size() == 1 && (axes[0] == 1 || axes[0] == 1 - rank);
}

// ReduceSum over axis 1 of the [N, R, C, H, W] view, keepdims 0.
bool reduce_sum(NodeContext& c) {
  const Val* x = c.viewed(0);
  if (!x) return false;
  const Val v = *x;
  const std::vector<int64_t>* d = c.dims(v.id);
  auto axes = d ? axes_of(c, 13) : std::nullopt;
  int64_t keep = 1;
  if (!axes || !c.attr("keepdims", keep)) return false;
  const std::vector<int64_t> seen = viewed_dims(v, *d);
  if (!grouped(v) || !is_axis1(*axes, 5) || keep != 0) {
    return c.fail(
        fmt::format("a ReduceSum over axes [{}]{} of {} [N, {}]; zoc sums over axis 1 "
                    "of a [N, R, C, H, W] view of an image (split attention's radix), "
                    "keepdims 0",
                    fmt::join(*axes, ", "), keep ? " (keepdims 1)" : "", view_name(v.view),
                    fmt::join(seen, ", ")));
  }
  Emitter emit{c};
  auto y = frontend::radix_sum(emit, v.id, *d, v.groups);
  return y && c.result_activation(*y);
}

// Unsqueeze at axis 1 of an image: the [N, 1, C, H, W] view (a stack's operand).
bool unsqueeze(NodeContext& c) {
  const Val& in = c.in(0);
  const std::vector<int64_t>* d = plain(in) ? c.dims(in.id) : nullptr;
  if (!d || d->size() != 3) return next(c);
  auto axes = axes_of(c, 13);
  if (!axes) return false;
  if (!is_axis1(*axes, 5)) return next(c);
  c.result(Val::activation(in.id, View::kGrouped, 1));
  return true;
}

// Concat along axis 1 of [N, R_i, C, H, W] views of images of one C, H, W: their images'
// concat, seen as [N, sum R_i, C, H, W] (torch.stack's export).
bool concat(NodeContext& c) {
  if (c.node().input_size() == 0 || !grouped(c.in(0))) return next(c);
  int64_t axis = 0;
  if (!c.attr("axis", axis)) return false;
  std::vector<ir::ValueId> inputs;
  std::vector<int64_t> per;  // C, H, W of each group
  int64_t groups = 0;
  for (int k = 0; k < c.node().input_size(); ++k) {
    const Val& v = c.in(static_cast<size_t>(k));
    const std::vector<int64_t>* d = grouped(v) ? c.dims(v.id) : nullptr;
    if (!d) return grouped(v) ? false : c.fail("a Concat of a [N, R, C, H, W] view and another");
    const std::vector<int64_t> mine = {(*d)[0] / v.groups, (*d)[1], (*d)[2]};
    if (!per.empty() && mine != per) {
      return c.fail(
          fmt::format("a Concat of [N, R, {}] and [N, R, {}] views; zoc concatenates "
                      "views of one C, H, W",
                      fmt::join(per, ", "), fmt::join(mine, ", ")));
    }
    per = mine;
    groups += v.groups;
    inputs.push_back(v.id);
  }
  if (axis != 1 && axis != -4) {
    return c.fail(
        fmt::format("a Concat along axis {} of [N, R, C, H, W] views; zoc concatenates "
                    "them along axis 1 (torch.stack of images)",
                    axis));
  }
  if (inputs.size() == 1) {
    c.result(Val::activation(inputs[0], View::kGrouped, groups));
    return true;
  }
  auto y = c.emit(ir::OpKind::Concat, std::move(inputs), {});
  if (!y) return false;
  c.result(Val::activation(*y, View::kGrouped, groups));
  return true;
}

// Softmax over axis 1 of the [N, R, C, H, W] view (opset 13's Softmax: over that axis alone).
bool softmax(NodeContext& c) {
  if (!grouped(c.in(0))) return next(c);
  const Val v = c.in(0);
  int64_t axis = -1;
  if (!c.attr("axis", axis)) return false;
  const std::vector<int64_t>* d = c.dims(v.id);
  if (!d) return false;
  if (c.opset() < 13 || (axis != 1 && axis != -4)) {
    return c.fail(
        fmt::format("a Softmax (opset {}) over axis {} of {}; zoc takes it over axis "
                    "1 alone (the radix, opset 13 and later)",
                    c.opset(), axis, view_name(v.view)));
  }
  Emitter emit{c};
  auto y = frontend::radix_softmax(emit, v.id, *d, v.groups);
  if (!y) return false;
  c.result(Val::activation(*y, View::kGrouped, v.groups));
  return true;
}

// Mul of two [N, R, C, H, W] views of one R (the branches by their attention [N, R, C, 1, 1]).
bool mul(NodeContext& c) {
  const Val &a = c.in(0), &b = c.in(1);
  if (!grouped(a) && !grouped(b)) return next(c);
  if (!grouped(a) || !grouped(b) || a.groups != b.groups) {
    return c.fail(
        fmt::format("a Mul of {} by {}; zoc multiplies two [N, R, C, H, W] views of "
                    "one R (split attention)",
                    view_name(a.view), view_name(b.view)));
  }
  const Val x = a, y = b;
  const std::vector<int64_t>* dx = c.dims(x.id);
  const std::vector<int64_t>* dy = dx ? c.dims(y.id) : nullptr;
  if (!dy) return false;
  const Expected<bool> swap = ir::mul_swaps_operands(*dx, *dy);
  if (!swap) return c.fail(swap.error().message);
  auto z = c.emit(ir::OpKind::Mul, *swap ? std::vector{y.id, x.id} : std::vector{x.id, y.id}, {});
  if (!z) return false;
  c.result(Val::activation(*z, View::kGrouped, x.groups));
  return true;
}

// A Reshape target (input 1) for an image of `numel` elements per sample: the batch first
// (kBatchDim, 0, or the declared batch), at most one -1, no 0 after it; resolved, or nullopt
// where it is not such a target (no failure recorded).
std::optional<std::vector<int64_t>> image_target(NodeContext& c, int64_t numel) {
  const Val& s = c.in(1);
  if (!s.is(Kind::kConstant) || s.constant->floating) return std::nullopt;
  std::vector<int64_t> to = s.constant->i;
  const std::optional<int64_t> batch = c.declared_batch();
  if (to.empty()) return std::nullopt;
  const bool batch_first = (!s.constant->batch.empty() && s.constant->batch[0]) || to[0] == 0 ||
                           (batch && to[0] == *batch);
  if (!batch_first) return std::nullopt;
  int64_t known = 1, unknown = 0;
  for (size_t k = 1; k < to.size(); ++k) {
    if (to[k] == -1) {
      if (++unknown > 1) return std::nullopt;
    } else if (to[k] < 1) {
      return std::nullopt;
    } else {
      known *= to[k];
    }
  }
  if (numel % known != 0) return std::nullopt;
  for (size_t k = 1; k < to.size(); ++k) {
    if (to[k] == -1) to[k] = numel / known;
  }
  if (!unknown && known != numel) return std::nullopt;
  return to;
}

// Reshape of an image or features to a 4-D [N, a, b, w] (rSoftMax's [N, G, R, -1]: the image
// [a, b, w]; its flattened result to [N, -1, 1, 1] as the TorchScript-based exporter writes it,
// the batch a literal) or to a 5-D [N, g, c, h, w] whose h, w are not the image's (the attention
// from a softmax over the 4-D tensor): the image [g*c, h, w] seen grouped. Everything else goes on.
bool reshape(NodeContext& c) {
  const Val& in = c.in(0);
  const std::vector<int64_t>* d = plain(in) && c.opset() >= 5 ? c.dims(in.id) : nullptr;
  const size_t rank = c.in(1).is(Kind::kConstant) ? c.in(1).constant->numel() : 0;
  const bool features = d && d->size() == 1 && rank == 4;
  if (!d || (d->size() != 3 && !features) || (rank != 4 && rank != 5)) return next(c);
  int64_t numel = 1;
  for (int64_t x : *d) numel *= x;
  const auto to = image_target(c, numel);
  if (!to) return next(c);
  const Val v = in;
  Emitter emit{c};
  if (rank == 4) {
    const std::vector<int64_t> image(to->begin() + 1, to->end());
    if (image == *d) return c.result_activation(v.id);
    auto y = frontend::reshape_image(emit, v.id, image[0], image[1], image[2]);
    return y && c.result_activation(*y);
  }
  if ((*to)[3] == (*d)[1] && (*to)[4] == (*d)[2]) return next(c);  // the plain grouped view
  auto y = frontend::reshape_image(emit, v.id, (*to)[1] * (*to)[2], (*to)[3], (*to)[4]);
  if (!y) return false;
  c.result(Val::activation(*y, View::kGrouped, (*to)[1]));
  return true;
}

// Transpose perm [0, 2, 1, 3] of a 4-D tensor the IR holds as an image (rSoftMax's
// [N, G, R, K] to [N, R, G, K]); other transposes go on.
bool transpose(NodeContext& c) {
  const Val& in = c.in(0);
  const std::vector<int64_t>* d = plain(in) ? c.dims(in.id) : nullptr;
  if (!d || d->size() != 3) return next(c);
  std::vector<int64_t> perm;
  if (!c.attr("perm", perm)) return false;
  if (perm != std::vector<int64_t>{0, 2, 1, 3}) return next(c);
  Emitter emit{c};
  auto y = frontend::swap_channels_rows(emit, in.id, *d);
  return y && c.result_activation(*y);
}

const OpEntry kRadixOps[] = {
    {"ReduceSum", reduce_sum},
    {"Unsqueeze", unsqueeze},
    {"Concat", concat},
    {"Softmax", softmax},
    {"Mul", mul},
    {"Reshape", reshape},
    {"Transpose", transpose},
};

}  // namespace

std::span<const OpEntry> radix_ops() { return kRadixOps; }

}  // namespace zoc::onnx::detail
