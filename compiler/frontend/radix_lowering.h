// Split attention over a radix (issue 36: timm's ResNeSt SplitAttn and SKNet's SelectiveKernel)
// written with the IR's existing ops, for both frontends. The radix dimension R is the 5-D view
// [N, R, C, H, W] of an image [N, R*C, H, W] (ActivationView::kGrouped), so the three things the
// models do over it are channel arithmetic on that image:
//   - x.sum(1), the sum over the radix: slice_channels of each of the R blocks of C channels,
//     added in order r = 0, 1, ..., R-1 (PyTorch's order over that dim; for R = 2 one add, the
//     same rounding as PyTorch's);
//   - softmax(x, dim=1), the softmax over the radix: the same elements reshaped to an image
//     [R, C*H*W, 1], whose softmax over the channels of each pixel is exactly that, and
//     reshaped back;
//   - transpose(1, 2) of a 4-D tensor [N, A, B, W] (ResNeSt's rSoftMax, [N, groups, R, -1]),
//     which the IR holds as the image [A, B, W]: a channel_shuffle of A groups of the image
//     [A*B, W, 1] (output channel b*A + a is input channel a*B + b), a reshape when A or B is 1.
// No new IR op: each step is an op the IR already has, which the interpreter runs exactly as
// its definition says (the cuDNN backend refuses reshape by name, and with it these models).
// `Emit` is the frontend's emitter, called as emit(op, inputs, attrs) -> std::optional<ValueId>.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "compiler/ir/graph.h"

namespace zoc::frontend {

inline ir::AttrValue radix_int(int64_t v) { return ir::AttrValue{ir::AttrKind::Int, v, {}, 0}; }

// The same elements as an image [c, h, w].
template <class Emit>
std::optional<ir::ValueId> reshape_image(Emit& emit, ir::ValueId x, int64_t c, int64_t h,
                                         int64_t w) {
  ir::Attrs a;
  a.set("channels", radix_int(c));
  a.set("height", radix_int(h));
  a.set("width", radix_int(w));
  return emit(ir::OpKind::Reshape, {x}, a);
}

// Sum over the radix of an image [R*C, H, W] seen as [R, C, H, W] (`d`: its dims): [C, H, W].
template <class Emit>
std::optional<ir::ValueId> radix_sum(Emit& emit, ir::ValueId x, const std::vector<int64_t>& d,
                                     int64_t radix) {
  const int64_t per = d[0] / radix;
  std::optional<ir::ValueId> sum;
  for (int64_t r = 0; r < radix; ++r) {
    std::optional<ir::ValueId> block = x;
    if (radix > 1) {
      ir::Attrs a;
      a.set("start", radix_int(r * per));
      a.set("count", radix_int(per));
      block = emit(ir::OpKind::SliceChannels, {x}, a);
    }
    if (!block) return std::nullopt;
    sum = r == 0 ? block : emit(ir::OpKind::Add, {*sum, *block}, ir::Attrs{});
    if (!sum) return std::nullopt;
  }
  return sum;
}

// Softmax over the radix of an image [R*C, H, W] seen as [R, C, H, W]: the same shape.
template <class Emit>
std::optional<ir::ValueId> radix_softmax(Emit& emit, ir::ValueId x, const std::vector<int64_t>& d,
                                         int64_t radix) {
  const int64_t rest = d[0] / radix * d[1] * d[2];
  auto rows = reshape_image(emit, x, radix, rest, 1);
  auto soft = rows ? emit(ir::OpKind::Softmax, {*rows}, ir::Attrs{}) : std::nullopt;
  return soft ? reshape_image(emit, *soft, d[0], d[1], d[2]) : std::nullopt;
}

// transpose(1, 2) of the 4-D tensor [N, A, B, W] held as the image [A, B, W] (`d`): [B, A, W].
template <class Emit>
std::optional<ir::ValueId> swap_channels_rows(Emit& emit, ir::ValueId x,
                                              const std::vector<int64_t>& d) {
  const int64_t a = d[0], b = d[1], w = d[2];
  if (a == 1 || b == 1) return reshape_image(emit, x, b, a, w);
  auto flat = reshape_image(emit, x, a * b, w, 1);
  ir::Attrs g;
  g.set("groups", radix_int(a));
  auto shuffled = flat ? emit(ir::OpKind::ChannelShuffle, {*flat}, g) : std::nullopt;
  return shuffled ? reshape_image(emit, *shuffled, b, a, w) : std::nullopt;
}

}  // namespace zoc::frontend
