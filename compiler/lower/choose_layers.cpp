// Which runtime layer runs each node, and where a fused convolution's activation runs: the
// rules of lower-to-target that map ops to layer kinds (compiler/ir/lowering.h), over the
// target's settings (target_desc.h). Each rule says why it is the one it is.
#include <fmt/format.h>

#include "compiler/ir/activation_params.h"
#include "compiler/lower/lower_to_target.h"
#include "compiler/support/sanitize.h"

namespace zoc::lower {
namespace {

using ir::Epilogue;
using ir::LayerKind;
using ir::OpKind;

struct Choice {
  LayerKind kind = LayerKind::None;
  Epilogue epilogue = Epilogue::kNone;
  const char* refusal = "this op";  // when kind is None
};

// A fused convolution. Depthwise ones (one channel in and out per group: MobileNet,
// EfficientNet, ConvNeXt) take zoc's kernel, with its epilogue fused, unless the target chose
// the library's, the convolution runs on the side stream, or its input's channels are padded.
// Then the graph API where the target chose it for every convolution, or where an ungrouped
// convolution's activation is one only the graph API's epilogue applies (one kernel instead of
// the legacy call plus an activation pass over memory); else the legacy call, which fuses ReLU
// only. An activation the chosen layer's epilogue lacks runs as a kernel after it, in place.
Choice conv_choice(const ir::Graph& g, const ir::Node& n, const TargetDesc& t, int side,
                   int64_t stored_c) {
  const ir::FusedActivation* a = ir::fused_activation(static_cast<int>(n.attrs.i("activation")));
  const int64_t groups = n.attrs.i("groups");
  if (t.depthwise_kernel && ir::is_depthwise_conv(g, n) && stored_c == groups && side < 0) {
    return {LayerKind::ConvDepthwise, a ? Epilogue::kFused : Epilogue::kNone};
  }
  const bool other = a && a->op != OpKind::Relu;
  const bool graph_epilogue = other && t.graph_epilogue && t.graph_epilogue(a->kind);
  const bool graph = t.graph_api || (groups == 1 && graph_epilogue);
  const LayerKind kind = graph ? LayerKind::ConvGraph : LayerKind::ConvLegacy;
  if (!a) return {kind, Epilogue::kNone};
  const bool fused = !other || (graph && graph_epilogue);
  return {kind, fused ? Epilogue::kFused : Epilogue::kSeparate};
}

// Pooling the library cannot express (ceil_mode windows hanging over the padded input, dilated
// max pooling) takes zoc's kernel, with PyTorch's edge rules. NHWC global average pooling takes
// zoc's adaptive kernel where the target says so (cuDNN's ran EfficientNet-B0's 17 at ~0.8 TB/s,
// 15% of its forward at batch 256 fp16 on an H100, 2026-11-25).
LayerKind pool_kind(const ir::Node& n, const TargetDesc& t) {
  if (n.op == OpKind::GlobalAvgPool) {
    const bool kernel = t.layout == ir::Layout::NHWC && t.nhwc_global_pool_kernel;
    return kernel ? LayerKind::AdaptivePool : LayerKind::Pool;
  }
  const bool dilated = n.op == OpKind::MaxPool2d && n.attrs.pair("dilation") != ir::Pair{1, 1};
  return n.attrs.b("ceil_mode") || dilated ? LayerKind::PoolKernel : LayerKind::Pool;
}

Choice choose(const ir::Graph& g, const ir::Node& n, const TargetDesc& t, int side,
              int64_t stored_c) {
  switch (n.op) {
    case OpKind::Input:
      return {LayerKind::InputInPlace};  // settled by lower_to_target
    case OpKind::FusedConv2d:
      return conv_choice(g, n, t, side, stored_c);
    case OpKind::Linear:
      return {t.linear_as_conv ? LayerKind::LinearConv : LayerKind::LinearGemm};
    case OpKind::GlobalAvgPool:
    case OpKind::MaxPool2d:
    case OpKind::AvgPool2d:
      return {pool_kind(n, t)};
    case OpKind::AdaptiveAvgPool2d:
      return {LayerKind::AdaptivePool};
    case OpKind::Softmax:
      return {LayerKind::Softmax};
    case OpKind::BatchNorm2d:
      return {LayerKind::BatchNorm};
    case OpKind::Add:
      return {LayerKind::Add};
    case OpKind::Concat:
    case OpKind::SliceChannels:
      return {LayerKind::Copy};
    case OpKind::Flatten:
      return {LayerKind::View};
    case OpKind::Mul:
    case OpKind::LayerScale:
      return {LayerKind::Mul};
    case OpKind::LayerNorm:
      return {LayerKind::LayerNorm};
    case OpKind::ChannelShuffle:
      return {LayerKind::Shuffle};
#define ZOC_ACTIVATION(op, grad, math) case OpKind::op:
#include "compiler/ir/ops.def"
      return {LayerKind::Activation};
    case OpKind::Conv2d:
    case OpKind::Dropout:
      return {LayerKind::None, Epilogue::kNone,
              "this op before the inference passes (run the pass pipeline)"};
    default:
      return {};  // training-graph ops
  }
}

}  // namespace

bool choose_layers(ir::Graph& g, const TargetDesc& t, const std::vector<int>& side_of,
                   int64_t input_stored_channels, Diagnostics& diags) {
  bool ok = true;
  const ir::ValueId input = g.nodes.front().output;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    ir::Node& n = g.nodes[i];
    const int64_t stored_c = !n.inputs.empty() && n.inputs[0] == input && input_stored_channels > 0
                                 ? input_stored_channels
                                 : (n.inputs.empty() ? 0 : g.type(n.inputs[0]).dims.at(0));
    const Choice c = choose(g, n, t, side_of[i], stored_c);
    if (c.kind == LayerKind::None) {
      diags.error(n.loc, fmt::format("layer '{}' ({}): {} does not support {}", shown_text(n.name),
                                     ir::op_info(n.op).name, t.name, c.refusal));
      ok = false;
      continue;
    }
    n.lowered = ir::Lowered{};
    n.lowered->kind = c.kind;
    n.lowered->epilogue = c.epilogue;
    n.lowered->side_branch = side_of[i];
  }
  return ok;
}

}  // namespace zoc::lower
