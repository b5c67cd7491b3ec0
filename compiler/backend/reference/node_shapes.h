// A node's kernel shapes (kernels.h) from its attributes and value types at batch n: shared by
// the inference interpreter (interpreter.cpp) and the training step (train_step.cpp), so that
// both read a convolution or a pooling layer the same way.
#pragma once

#include "compiler/backend/reference/kernels.h"
#include "compiler/ir/graph.h"

namespace zoc::ref {

// Conv2d or FusedConv2d: input 0's [C, H, W], the output's [K, OH, OW], kernel/stride/padding/
// dilation/groups.
inline Conv2dShape conv_shape_of(const ir::Graph& g, const ir::Node& node, int64_t n) {
  const ir::Attrs& a = node.attrs;
  const std::vector<int64_t>& in = g.type(node.inputs[0]).dims;
  const std::vector<int64_t>& out = g.type(node.output).dims;
  const ir::Pair k = a.pair("kernel"), s = a.pair("stride"), p = a.pair("padding"),
                 d = a.pair("dilation");
  return Conv2dShape{n,   in[0], in[1], in[2], out[0],        k.h,    k.w,   s.h,
                     s.w, p.h,   p.w,   d.h,   d.w,    a.i("groups"), out[1], out[2]};
}

// MaxPool2d or AvgPool2d (dilation 1 and count_include_pad for average pooling).
inline Pool2dShape pool_shape_of(const ir::Graph& g, const ir::Node& node, int64_t n) {
  const ir::Attrs& a = node.attrs;
  const bool is_max = node.op == ir::OpKind::MaxPool2d;
  const std::vector<int64_t>& in = g.type(node.inputs[0]).dims;
  const std::vector<int64_t>& out = g.type(node.output).dims;
  const ir::Pair k = a.pair("kernel"), s = a.pair("stride"), p = a.pair("padding");
  const ir::Pair d = is_max ? a.pair("dilation") : ir::Pair{1, 1};
  return Pool2dShape{n,   in[0], in[1], in[2], k.h,    k.w,    s.h,
                     s.w, p.h,   p.w,   d.h,   d.w,    out[1], out[2],
                     !is_max && a.b("count_include_pad")};
}

}  // namespace zoc::ref
