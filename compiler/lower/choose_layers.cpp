// Which runtime layer runs each node, and where a fused convolution's activation runs: the
// rules of lower-to-target that map ops to layer kinds (compiler/ir/lowering.h), over the
// target's settings (target_desc.h). Each rule says why it is the one it is. This is the one
// place that decides what the backend supports: an op or form without a layer is refused here,
// at its layer, naming the form (`zoc compile` and `zoc ir` with a target option both lower).
#include <fmt/format.h>

#include <algorithm>

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
// An int8 graph (passes/quantize_int8.cpp) runs on the reference interpreter only: the GPU's
// int8 convolution is measured (results/2026-11-29-h200-int8-probe) but not a layer yet.
constexpr const char* kInt8Yet = "int8 (quantized convolutions) on the GPU yet";

Choice conv_choice(const ir::Graph& g, const ir::Node& n, const TargetDesc& t, int side,
                   int64_t stored_c) {
  if (n.attrs.has("int8_in")) return {LayerKind::None, Epilogue::kNone, kInt8Yet};
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
  return pool_needs_kernel(n) ? LayerKind::PoolKernel : LayerKind::Pool;
}

// A tensor and a constant (a scalar or a weight, per channel or one value: shape inference
// proved the form) run zoc's const_op kernel, any of the four ops. Of two tensors, the backend's
// add, sub and div read two of one shape, its mul also an image and its channel vector, given
// second; broadcasting otherwise is not built yet.
Choice elementwise_choice(const ir::Graph& g, const ir::Node& n) {
  if (n.inputs.size() == 1) return {LayerKind::ConstOp};
  const auto dims = [&](size_t k) { return g.type(n.inputs[k]).dims; };
  const bool same_shape = dims(0) == dims(1);
  const bool channel_vector =
      dims(0).size() == 3 && dims(1) == std::vector<int64_t>{dims(0)[0], 1, 1};
  if (n.op == OpKind::Add && same_shape) return {LayerKind::Add};
  if (n.op == OpKind::Mul && (same_shape || channel_vector)) return {LayerKind::Mul};
  if ((n.op == OpKind::Sub || n.op == OpKind::Div) && same_shape) return {LayerKind::Binary};
  switch (n.op) {
    case OpKind::Add:
      return {LayerKind::None, Epilogue::kNone, "add with broadcasting yet"};
    case OpKind::Mul:
      return {LayerKind::None, Epilogue::kNone,
              "mul with broadcasting other than an image by its channel vector yet"};
    case OpKind::Sub:
      return {LayerKind::None, Epilogue::kNone, "sub with broadcasting yet"};
    default:
      return {LayerKind::None, Epilogue::kNone, "div with broadcasting yet"};
  }
}

// Whether value v is stored in NCHW's element order: NCHW storage, features, or an NHWC image
// of one channel or one pixel.
bool nchw_order(const ir::Graph& g, ir::ValueId v, const TargetDesc& t) {
  const std::vector<int64_t>& d = g.type(v).dims;
  return t.layout != ir::Layout::NHWC || d.size() != 3 || d[0] == 1 || d[1] * d[2] == 1;
}

// A reshape (or flatten) is a view where both sides are stored in NCHW's order, and a copy
// between the stored orders otherwise. A flatten of an NHWC image read only by linear layers
// (readers: every read of each value; linear_readers: those by a linear layer) stays a view:
// they permute their weights' columns to its (h, w, c) order instead.
Choice reshape_choice(const ir::Graph& g, const ir::Node& n, const TargetDesc& t,
                      const std::vector<int>& readers, const std::vector<int>& linear_readers) {
  if (nchw_order(g, n.inputs[0], t) && nchw_order(g, n.output, t)) return {LayerKind::View};
  const auto v = static_cast<size_t>(n.output);
  if (n.op == OpKind::Flatten && readers[v] == linear_readers[v] &&
      std::count(g.outputs.begin(), g.outputs.end(), n.output) == 0) {
    return {LayerKind::View};
  }
  return {LayerKind::Relayout};
}

// A transposed convolution is cuDNN's backward-data convolution of the forward convolution from
// its output to its input, which exists only where the output size is that convolution's input
// size, i.e. output_padding below the stride (PyTorch also allows it below the dilation).
Choice conv_transpose_choice(const ir::Node& n) {
  if (const char* why = conv_transpose_refusal(n)) return {LayerKind::None, Epilogue::kNone, why};
  return {LayerKind::ConvTranspose};
}

// An upsampling whose result is only a model output (a segmentation network's class scores at
// the input's size, its largest tensor) writes the caller's fp32 NCHW rows itself: no arena
// slot, no pass of the output kernel over it. On the main stream only (the outputs leave after
// every side branch joined).
bool output_only(const ir::Graph& g, const ir::Node& n, int side, const std::vector<int>& readers) {
  return side < 0 && readers[static_cast<size_t>(n.output)] == 0 &&
         std::count(g.outputs.begin(), g.outputs.end(), n.output) == 1;
}

Choice upsample_choice(const ir::Graph& g, const ir::Node& n, int side,
                       const std::vector<int>& readers) {
  return {output_only(g, n, side, readers) ? LayerKind::UpsampleOutput : LayerKind::Upsample};
}

// Argmax over channels makes a class map, what a user asks a segmentation network for last: it
// runs as a model output, its indices written as fp32 straight into the caller's rows (exact
// below 2^24 channels). Its integer result feeding another layer is not built.
Choice argmax_choice(const ir::Graph& g, const ir::Node& n, int side,
                     const std::vector<int>& readers) {
  if (output_only(g, n, side, readers)) return {LayerKind::ArgmaxOutput};
  return {LayerKind::None, Epilogue::kNone,
          "argmax except as a model output that no other layer reads yet"};
}

Choice choose(const ir::Graph& g, const ir::Node& n, const TargetDesc& t, int side,
              int64_t stored_c, const std::vector<int>& readers,
              const std::vector<int>& linear_readers) {
  switch (n.op) {
    case OpKind::Input:
      return {LayerKind::InputInPlace};  // settled by lower_to_target
    case OpKind::FusedConv2d:
      return conv_choice(g, n, t, side, stored_c);
    case OpKind::ConvTranspose2d:
      return conv_transpose_choice(n);
    case OpKind::Linear:
      return {t.linear_as_conv ? LayerKind::LinearConv : LayerKind::LinearGemm};
    case OpKind::GlobalAvgPool:
    case OpKind::MaxPool2d:
    case OpKind::AvgPool2d:
      return {pool_kind(n, t)};
    case OpKind::AdaptiveAvgPool2d:
      return {LayerKind::AdaptivePool};
    case OpKind::Softmax:  // over features (cuDNN's), or over the channels of an image (zoc's)
      return {g.type(n.inputs[0]).dims.size() == 1 ? LayerKind::Softmax
                                                   : LayerKind::ChannelSoftmax};
    case OpKind::LogSoftmax:
      return {LayerKind::ChannelSoftmax};
    case OpKind::BatchNorm2d:
      return {LayerKind::BatchNorm};
    case OpKind::Add:
      return elementwise_choice(g, n);
    case OpKind::Concat:
    case OpKind::SliceChannels:
      return {LayerKind::Copy};
    case OpKind::Flatten:
    case OpKind::Reshape:
      return reshape_choice(g, n, t, readers, linear_readers);
    case OpKind::Mul:
      return elementwise_choice(g, n);
    case OpKind::LayerScale:
      return {LayerKind::Mul};
    case OpKind::Sub:
    case OpKind::Div:
      return elementwise_choice(g, n);
    case OpKind::Argmax:
      return argmax_choice(g, n, side, readers);
    case OpKind::Pad:
      return {LayerKind::PadKernel};
    case OpKind::ChannelConv1d:
      return {LayerKind::ChannelConv};
    case OpKind::LayerNorm:
      return {LayerKind::LayerNorm};
    case OpKind::ChannelShuffle:
      return {LayerKind::Shuffle};
    case OpKind::UpsampleNearest:
    case OpKind::UpsampleBilinear:
      return upsample_choice(g, n, side, readers);
#define ZOC_ACTIVATION(op, grad, math) case OpKind::op:
#include "compiler/ir/ops.def"
      return {LayerKind::Activation};
    case OpKind::Conv2d:
    case OpKind::Dropout:
      return {LayerKind::None, Epilogue::kNone,
              "this op before the inference passes (run the pass pipeline)"};
    case OpKind::Quantize:
      return {LayerKind::None, Epilogue::kNone, kInt8Yet};
    default:
      return {};  // training-graph ops
  }
}

}  // namespace

const char* conv_transpose_refusal(const ir::Node& n) {
  const ir::Pair op = n.attrs.pair("output_padding"), s = n.attrs.pair("stride");
  if (op.h >= s.h || op.w >= s.w) {
    return "a transposed convolution whose output_padding is not below its stride";
  }
  return nullptr;
}

bool pool_needs_kernel(const ir::Node& n) {
  const bool dilated = n.op == OpKind::MaxPool2d && n.attrs.pair("dilation") != ir::Pair{1, 1};
  return (n.op == OpKind::MaxPool2d || n.op == OpKind::AvgPool2d) &&
         (n.attrs.b("ceil_mode") || dilated);
}

bool choose_layers(ir::Graph& g, const TargetDesc& t, const std::vector<int>& side_of,
                   int64_t input_stored_channels, Diagnostics& diags) {
  bool ok = true;
  const ir::ValueId input = g.nodes.front().output;
  std::vector<int> readers(g.values.size(), 0);         // nodes reading each value
  std::vector<int> linear_readers(g.values.size(), 0);  // of them, linear layers
  for (const ir::Node& n : g.nodes) {
    for (ir::ValueId v : n.inputs) ++readers[static_cast<size_t>(v)];
    if (n.op == OpKind::Linear) ++linear_readers[static_cast<size_t>(n.inputs[0])];
  }
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    ir::Node& n = g.nodes[i];
    const int64_t stored_c = !n.inputs.empty() && n.inputs[0] == input && input_stored_channels > 0
                                 ? input_stored_channels
                                 : (n.inputs.empty() ? 0 : g.type(n.inputs[0]).dims.at(0));
    const Choice c = choose(g, n, t, side_of[i], stored_c, readers, linear_readers);
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
