// A node's kernel shapes (kernels.h) from its attributes and the dims of the tensor it reads
// and of the one it produces (the forward's; for a backward node, its x and dy) at batch n, so
// that a layer and its gradient read a convolution or a pooling window the same way.
#pragma once

#include "compiler/backend/reference/kernels.h"
#include "compiler/ir/graph.h"

namespace zoc::ref {

// conv2d, fused_conv2d, conv2d_grad: input [C, H, W], output [K, OH, OW], kernel/stride/
// padding/dilation/groups.
inline Conv2dShape conv_shape_of(const ir::Attrs& a, const std::vector<int64_t>& in,
                                 const std::vector<int64_t>& out, int64_t n) {
  const ir::Pair k = a.pair("kernel"), s = a.pair("stride"), p = a.pair("padding"),
                 d = a.pair("dilation");
  return Conv2dShape{n,   in[0], in[1], in[2], out[0], k.h,           k.w,    s.h,
                     s.w, p.h,   p.w,   d.h,   d.w,    a.i("groups"), out[1], out[2]};
}

// Max pooling (is_max) or average pooling (dilation 1 and count_include_pad), or their
// gradients.
inline Pool2dShape pool_shape_of(const ir::Attrs& a, bool is_max, const std::vector<int64_t>& in,
                                 const std::vector<int64_t>& out, int64_t n) {
  const ir::Pair k = a.pair("kernel"), s = a.pair("stride"), p = a.pair("padding");
  const ir::Pair d = is_max ? a.pair("dilation") : ir::Pair{1, 1};
  return Pool2dShape{n,   in[0], in[1],  in[2],  k.h,
                     k.w, s.h,   s.w,    p.h,    p.w,
                     d.h, d.w,   out[1], out[2], !is_max && a.b("count_include_pad")};
}

// upsample_nearest, upsample_bilinear and their gradients: [C, H, W] to [C, OH, OW]. A scale
// factor the layer gave is what PyTorch's kernel scales by; 0: in / out.
inline UpsampleShape upsample_shape_of(const ir::Attrs& a, const std::vector<int64_t>& in,
                                       const std::vector<int64_t>& out, int64_t n) {
  auto scale = [&](const char* name) { return a.has(name) ? a.f(name) : 0.0; };
  return UpsampleShape{n * in[0],
                       in[1],
                       in[2],
                       out[1],
                       out[2],
                       scale("scale_h"),
                       scale("scale_w"),
                       a.has("align_corners") && a.b("align_corners"),
                       in[0] == 1};
}

}  // namespace zoc::ref
