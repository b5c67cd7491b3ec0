// One snippet per op: what each layer contributes to the generated model. A layer is a constant
// (its shapes, the tensors it reads and writes, its packed weights: zoc/cudnn/model_calls.h), a
// descriptor bundle member if it needs one, its weight packing, and one call in the layer
// sequence (`v.conv(conv1_, kConv_conv1, "conv1")`) that every step of the runtime skeleton
// (zoc/cudnn/model.h: create, describe, bind, run, tune, destroy) walks. The graph is lowered
// (compiler/ir/lowering.h): each node's layer kind picks its snippet, and the snippet prints
// what the lowering decided (layouts, stored channels, arena slots, streams, weight layouts).
#include <fmt/format.h>

#include "compiler/backend/cudnn/emit_snippet.h"
#include "compiler/ir/activation_params.h"
#include "compiler/support/sanitize.h"

namespace zoc::cudnn {
namespace {

using snippet::comment;
using snippet::constant;
using snippet::cstr;
using snippet::Dims;
using snippet::dims_of;
using snippet::param;
using snippet::timed_call;

// "conv 3x3/2, 64->128, 56x56 -> 28x28"
std::string conv_summary(const EmitContext& ctx, const ir::Node& n) {
  const Dims in = dims_of(ctx.g.type(n.inputs[0]));
  const Dims out = dims_of(ctx.g.type(n.output));
  const ir::Pair k = n.attrs.pair("kernel"), s = n.attrs.pair("stride");
  std::string text = fmt::format("conv {}x{}/{}, {}->{}, {}x{} -> {}x{}", k.h, k.w, s.h, in.c,
                                 out.c, in.h, in.w, out.h, out.w);
  if (n.attrs.i("groups") > 1) text += fmt::format(", groups {}", n.attrs.i("groups"));
  if (n.inputs.size() == 2) text += ", + residual";
  if (const ir::FusedActivation* a = ir::fused_activation(static_cast<int>(n.attrs.i("activation")))) {
    text += fmt::format(", {}", ir::op_info(a->op).name);
  }
  return text;
}

}  // namespace

std::string activation_params_text(const act::Params& p) {
  return fmt::format("{{{:.9g}, {:.9g}}}", p.a, p.b);
}

namespace {

// The node that waits for side branch k.
const ir::Node* join_of(const EmitContext& ctx, int k) {
  for (const ir::Node& n : ctx.g.nodes) {
    for (int w : n.lowered->joins) {
      if (w == k) return &n;
    }
  }
  return nullptr;
}

// A convolution as the generated ConvLayer sees it: input as stored, filter, output.
struct ConvGeom {
  int64_t c = 0, h = 1, w = 1;  // input channels (as stored), height, width
  int64_t k = 0, r = 1, s = 1;  // output channels, filter height and width
  int64_t pad_h = 0, pad_w = 0, stride_h = 1, stride_w = 1, dil_h = 1, dil_w = 1, groups = 1;
  int64_t out_h = 1, out_w = 1;
  bool relu = false;
  bool residual = false;  // a second input added before the activation
  // An activation other than ReLU in a graph-API convolution's epilogue, and its parameters;
  // nullptr when there is none or it runs as a kernel of its own.
  const ir::FusedActivation* other = nullptr;
  act::Params other_params{};
};

// Everything of a fused convolution except its weight packing: the call constant, the
// descriptor bundle (legacy or graph API) and the call, on the side stream when the schedule put
// it there. `summary` is the sequence's comment.
void emit_conv_call(EmitContext& ctx, const ir::Node& n, size_t i, const ConvGeom& g,
                    const std::string& summary) {
  const std::string& id = ctx.ids[i];
  const int side = n.lowered->side_branch;  // >= 0: runs on the side stream
  std::string shape = fmt::format(
      "{{{}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}", g.c, g.h, g.w, g.k,
      g.r, g.s, g.pad_h, g.pad_w, g.stride_h, g.stride_w, g.dil_h, g.dil_w, g.groups, g.out_h,
      g.out_w, g.relu ? "true" : "false");
  if (g.other) {  // ConvShape's other_activation, activation, activation_params
    shape += fmt::format(", true, zoc::act::Kind::k{}, {}", g.other->math,
                         activation_params_text(g.other_params));
  }
  shape += "}";
  constant(ctx, "ConvCall", "kConv_" + id,
           {shape, ctx.tensor(n.inputs[0]), "kW_" + id, "kB_" + id,
            g.residual ? ctx.tensor(n.inputs[1]) : "zoc::kNoTensor", ctx.tensor(n.output)});
  const bool graph = n.lowered->kind == ir::LayerKind::ConvGraph;
  ctx.s.members.line("zoc::{} {}_;  // {}", graph ? "GraphConvLayer" : "ConvLayer", id,
                     sanitize_comment(ctx.title(n)));
  comment(ctx, n, summary);
  if (side >= 0) {
    ctx.s.layers.line("// ... on the side stream, beside the main branch until layer {} joins it",
                      sanitize_comment(join_of(ctx, side)->name));
    timed_call(ctx, n, "v.side_conv({}_, kConv_{}, {}, {})", id, id, side, ctx.name_literal(n));
  } else {
    timed_call(ctx, n, "v.conv({}_, kConv_{}, {})", id, id, ctx.name_literal(n));
  }
}

// Any activation of zoc/math/activations.h (`kind`: its zoc::act::Kind), through the model's
// generic activation kernel: y = f(x), or in place after a convolution (x = y, `what` says).
bool emit_activation(EmitContext& ctx, const ir::Node& n, size_t i, const std::string& kind,
                     const act::Params& p, ir::ValueId x, const std::string& what) {
  const std::string& id = ctx.ids[i];
  constant(ctx, "ActivationCall", "kAct_" + id,
           {kind, activation_params_text(p), std::to_string(ctx.g.type(n.output).sample_numel()),
            ctx.tensor(x), ctx.tensor(n.output)});
  comment(ctx, n, what);
  timed_call(ctx, n, "v.activation(kAct_{}, {})", id, ctx.name_literal(n));
  return true;
}

// An activation node: y = f(x) through the activation kernel.
bool emit_node_activation(EmitContext& ctx, const ir::Node& n, size_t i) {
  switch (n.op) {
#define ZOC_ACTIVATION(op, grad, math)                                                       \
  case ir::OpKind::op:                                                                       \
    return emit_activation(ctx, n, i, "zoc::act::Kind::k" #math,                            \
                           ir::activation_params<act::math>(n), n.inputs[0],                \
                           std::string(ir::op_info(ir::OpKind::op).name));
#include "compiler/ir/ops.def"
    default: break;
  }
  return false;
}

// A depthwise convolution through zoc's kernel (zoc/core/depthwise.cuh), its epilogue fused.
void emit_depthwise_call(EmitContext& ctx, const ir::Node& n, size_t i, const ConvGeom& g,
                         const std::string& summary) {
  const std::string& id = ctx.ids[i];
  const ir::FusedActivation* a = ir::fused_activation(static_cast<int>(n.attrs.i("activation")));
  const std::string geometry = fmt::format(
      "{{{}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, zoc::act::Kind::k{}, {}}}",
      g.c, g.h, g.w, g.out_h, g.out_w, g.r, g.s, g.stride_h, g.stride_w, g.pad_h, g.pad_w,
      g.dil_h, g.dil_w, snippet::nhwc_flag(ctx, n.inputs[0]), a ? "true" : "false",
      a ? a->math : "Relu",
      activation_params_text(ir::fused_activation_params(n)));
  constant(ctx, "DepthwiseCall", "kDw_" + id,
           {geometry, ctx.tensor(n.inputs[0]), "kW_" + id, "kB_" + id,
            g.residual ? ctx.tensor(n.inputs[1]) : "zoc::kNoTensor", ctx.tensor(n.output)});
  comment(ctx, n, summary + " (zoc's depthwise kernel)");
  timed_call(ctx, n, "v.depthwise(kDw_{}, {})", id, ctx.name_literal(n));
}

bool emit_conv(EmitContext& ctx, const ir::Node& n, size_t i) {
  const std::string& id = ctx.ids[i];
  const ir::Lowered& l = *n.lowered;
  const Dims in = dims_of(ctx.g.type(n.inputs[0]));
  const Dims out = dims_of(ctx.g.type(n.output));
  const ir::Pair k = n.attrs.pair("kernel"), s = n.attrs.pair("stride"),
                 p = n.attrs.pair("padding"), d = n.attrs.pair("dilation");
  const int64_t groups = n.attrs.i("groups");
  const ir::FusedActivation* a = ir::fused_activation(static_cast<int>(n.attrs.i("activation")));
  const bool relu = a && a->op == ir::OpKind::Relu;
  const ConvGeom g{.c = ctx.stored_channels(n.inputs[0]), .h = in.h, .w = in.w,
                   .k = out.c, .r = k.h, .s = k.w,
                   .pad_h = p.h, .pad_w = p.w, .stride_h = s.h, .stride_w = s.w,
                   .dil_h = d.h, .dil_w = d.w, .groups = groups,
                   .out_h = out.h, .out_w = out.w,
                   .relu = relu, .residual = n.inputs.size() == 2};

  const ir::ParamSpec* bn_w = param(n, ir::ParamRole::kBnWeight);
  std::string bn = "nullptr";
  if (bn_w) bn = fmt::format("\"{}\"", sanitize_comment(bn_w->name.substr(0, bn_w->name.size() - 7)));
  const double eps = n.attrs.has("bn_eps") ? n.attrs.f("bn_eps") : 0.0;
  ctx.s.pack.line("// {}", sanitize_comment(ctx.title(n)));
  const bool weight_2d = n.attrs.flag("weight_2d");
  const bool taps_major = l.weights == ir::WeightLayout::kTapsMajor;
  const bool channels_last = taps_major || l.weights == ir::WeightLayout::kKRSC;
  const char* tail = taps_major ? ", false, true" : weight_2d ? ", true" : "";
  const std::string spec = fmt::format(
      "{{{}, {}, {}, {:.9g}, {}, {}, {}, {}, {}, {}, kDType{}}}", cstr(param(n, ir::ParamRole::kWeight)),
      cstr(param(n, ir::ParamRole::kBias)), bn, eps, out.c, in.c / groups, k.h, k.w,
      channels_last ? "true" : "false", ctx.stored_channels(n.inputs[0]) / groups, tail);
  ctx.s.pack.wrapped("ZOC_TRY(zoc::pack_conv(source,", {" " + spec, "staging + kW_" + id, "staging + kB_" + id},
                     "));");
  if (l.kind == ir::LayerKind::ConvDepthwise) {
    emit_depthwise_call(ctx, n, i, g, conv_summary(ctx, n));
    return true;
  }
  ConvGeom with = g;
  const bool fused_other = a && !relu && l.epilogue == ir::Epilogue::kFused;
  if (fused_other) with.other = a, with.other_params = ir::fused_activation_params(n);
  emit_conv_call(ctx, n, i, with, conv_summary(ctx, n));
  // An activation the convolution's epilogue lacks (the legacy call fuses ReLU only; cuDNN's
  // pointwise operations have no hardswish): the model's activation kernel, in place on the
  // conv's output.
  if (l.epilogue == ir::Epilogue::kSeparate) {
    emit_activation(ctx, n, i, fmt::format("zoc::act::Kind::k{}", a->math),
                    ir::fused_activation_params(n), n.output,
                    fmt::format("{} of {}, in place", ir::op_info(a->op).name, n.name));
  }
  return true;
}

// Pooling cuDNN cannot express (ceil_mode windows hanging over the padded input, dilated max
// pooling): zoc/core/layer_kernels.cuh's pooling kernel, with PyTorch's edge rules.
bool emit_pool_kernel(EmitContext& ctx, const ir::Node& n, size_t i) {
  const std::string& id = ctx.ids[i];
  const Dims in = dims_of(ctx.g.type(n.inputs[0])), out = dims_of(ctx.g.type(n.output));
  const ir::Pair k = n.attrs.pair("kernel"), s = n.attrs.pair("stride"), p = n.attrs.pair("padding");
  const bool is_max = n.op == ir::OpKind::MaxPool2d;
  const ir::Pair d = is_max ? n.attrs.pair("dilation") : ir::Pair{1, 1};
  const bool include_pad = !is_max && n.attrs.b("count_include_pad");
  const std::string geometry = fmt::format(
      "{{{}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}}}", in.c, in.h, in.w,
      out.h, out.w, k.h, k.w, s.h, s.w, p.h, p.w, d.h, d.w, is_max ? "true" : "false",
      include_pad ? "true" : "false", snippet::nhwc_flag(ctx, n.inputs[0]));
  constant(ctx, "PoolKernelCall", "kPool_" + id,
           {geometry, ctx.tensor(n.inputs[0]), ctx.tensor(n.output)});
  comment(ctx, n,
          fmt::format("{} pool {}x{}/{} pad {}{}{}, {}x{} -> {}x{} (zoc's kernel)",
                      is_max ? "max" : "average", k.h, k.w, s.h, p.h,
                      n.attrs.b("ceil_mode") ? ", ceil_mode" : "",
                      d != ir::Pair{1, 1} ? fmt::format(", dilation {}", d.h) : "", in.h, in.w,
                      out.h, out.w));
  timed_call(ctx, n, "v.pool_kernel(kPool_{}, {})", id, ctx.name_literal(n));
  return true;
}

bool emit_pool(EmitContext& ctx, const ir::Node& n, size_t i) {
  const std::string& id = ctx.ids[i];
  const Dims in = dims_of(ctx.g.type(n.inputs[0]));
  const Dims out = dims_of(ctx.g.type(n.output));
  int64_t kh = in.h, kw = in.w, sh = in.h, sw = in.w, ph = 0, pw = 0;
  std::string mode = "CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING";
  std::string what = fmt::format("global average pool {}x{}", in.h, in.w);
  if (n.op != ir::OpKind::GlobalAvgPool) {
    const ir::Pair k = n.attrs.pair("kernel"), s = n.attrs.pair("stride"),
                   p = n.attrs.pair("padding");
    kh = k.h, kw = k.w, sh = s.h, sw = s.w, ph = p.h, pw = p.w;
    const bool is_max = n.op == ir::OpKind::MaxPool2d;
    mode = is_max ? "CUDNN_POOLING_MAX"
                  : (n.attrs.b("count_include_pad") ? "CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING"
                                                    : "CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING");
    what = fmt::format("{} pool {}x{}/{} pad {}, {}x{} -> {}x{}", is_max ? "max" : "average", kh,
                       kw, sh, ph, in.h, in.w, out.h, out.w);
  }
  const std::string shape =
      fmt::format("{{{}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}}}", mode, in.c, in.h, in.w, kh,
                  kw, ph, pw, sh, sw, out.h, out.w);
  constant(ctx, "PoolCall", "kPool_" + id, {shape, ctx.tensor(n.inputs[0]), ctx.tensor(n.output)});
  ctx.s.members.line("zoc::PoolLayer {}_;  // {}", id, sanitize_comment(ctx.title(n)));
  comment(ctx, n, what);
  timed_call(ctx, n, "v.pool({}_, kPool_{}, {})", id, id, ctx.name_literal(n));
  return true;
}

bool emit_softmax(EmitContext& ctx, const ir::Node& n, size_t i) {
  const std::string& id = ctx.ids[i];
  const Dims d = dims_of(ctx.g.type(n.output));
  constant(ctx, "SoftmaxCall", "kSoftmax_" + id,
           {std::to_string(d.c), ctx.tensor(n.inputs[0]), ctx.tensor(n.output)});
  ctx.s.members.line("zoc::TensorLayer {}_;  // {}", id, sanitize_comment(ctx.title(n)));
  comment(ctx, n, fmt::format("softmax over {} features", d.c));
  timed_call(ctx, n, "v.softmax({}_, kSoftmax_{}, {})", id, id, ctx.name_literal(n));
  return true;
}

bool emit_batchnorm(EmitContext& ctx, const ir::Node& n, size_t i) {
  const std::string& id = ctx.ids[i];
  const Dims d = dims_of(ctx.g.type(n.output));
  constant(ctx, "BatchNormCall", "kBn_" + id,
           {std::to_string(d.c), std::to_string(d.h), std::to_string(d.w), "kW_" + id,
            fmt::format("{:.9g}", n.attrs.f("eps")), ctx.tensor(n.inputs[0]),
            ctx.tensor(n.output)});
  ctx.s.members.line("zoc::BatchNormLayer {}_;  // {}", id, sanitize_comment(ctx.title(n)));
  ctx.s.pack.line("ZOC_TRY(zoc::pack_batchnorm(source, \"{}\", {}, staging + kW_{}));",
                  sanitize_comment(n.name), d.c, id);
  comment(ctx, n, "batch norm (not folded: no conv before it)");
  timed_call(ctx, n, "v.batchnorm({}_, kBn_{}, {})", id, id, ctx.name_literal(n));
  return true;
}

bool emit_linear(EmitContext& ctx, const ir::Node& n, size_t i) {
  const std::string& id = ctx.ids[i];
  const int64_t in = ctx.g.type(n.inputs[0]).dims[0];
  const int64_t out = ctx.g.type(n.output).dims[0];
  // Features flattened from an NHWC image are in (h, w, c) order on the device: the lowering
  // packs the weight's columns in that order (WeightLayout::kRowsHWC).
  Dims hwc{0, 0, 0};
  const ir::Node& src = ctx.g.producer(n.inputs[0]);
  if (n.lowered->weights == ir::WeightLayout::kRowsHWC) hwc = dims_of(ctx.g.type(src.inputs[0]));
  const ir::ParamSpec* bias = param(n, ir::ParamRole::kBias);
  ctx.s.pack.line("// {}", sanitize_comment(ctx.title(n)));
  const std::string spec =
      fmt::format("{{{}, {}, {}, {}, {}, {}, {}, kDType}}", cstr(param(n, ir::ParamRole::kWeight)),
                  cstr(bias), out, in, hwc.c, hwc.h, hwc.w);
  ctx.s.pack.wrapped("ZOC_TRY(zoc::pack_linear(source,",
                     {" " + spec, "staging + kW_" + id,
                      n.lowered->bias_offset >= 0 ? "staging + kB_" + id : "nullptr"},
                     "));");
  if (n.lowered->kind == ir::LayerKind::LinearConv) {
    // The packed [out, in] matrix is the filter of a convolution over the image the features
    // were flattened from (in the stored layout's order: KRSC for NHWC, KCRS for NCHW), or over
    // a 1x1 image of `in` channels. One output pixel: the [N, out] result.
    const Dims d = src.op == ir::OpKind::Flatten ? dims_of(ctx.g.type(src.inputs[0])) : Dims{in, 1, 1};
    const ConvGeom geom{.c = d.c, .h = d.h, .w = d.w, .k = out, .r = d.h, .s = d.w};
    emit_conv_call(ctx, n, i, geom,
                   fmt::format("linear {} -> {}, as a cuDNN convolution with a {}x{}x{} filter{}",
                               in, out, geom.c, geom.h, geom.w,
                               bias ? " and the bias in its epilogue" : ""));
    return true;
  }
  constant(ctx, "LinearCall", "kFc_" + id,
           {std::to_string(in), std::to_string(out), "kW_" + id,
            bias ? "kB_" + id : "zoc::kNoTensor", ctx.tensor(n.inputs[0]), ctx.tensor(n.output)});
  comment(ctx, n, fmt::format("linear {} -> {}{}", in, out,
                              hwc.c ? " (columns permuted to the NHWC flatten order)" : ""));
  timed_call(ctx, n, "v.linear(kFc_{}, {})", id, ctx.name_literal(n));
  return true;
}

}  // namespace

bool emit_concat(EmitContext& ctx, const ir::Node& n, size_t i) {
  const std::string& id = ctx.ids[i];
  const Dims out = dims_of(ctx.g.type(n.output));
  ctx.s.constants.line("constexpr zoc::CopyCall kCat_{}[] = {{", id);
  int64_t c_off = 0;
  for (ir::ValueId v : n.inputs) {
    const Dims d = dims_of(ctx.g.type(v));
    const auto [unit, rows] = snippet::copy_rows(ctx, v);
    ctx.s.constants.line("    {{{}, {}, {}, {}, {}, {}, {}}},", ctx.tensor(v), ctx.tensor(n.output),
                         c_off * unit, out.c * unit, d.c * unit, d.c * unit, rows);
    c_off += d.c;
  }
  ctx.s.constants.line("}};");
  comment(ctx, n, fmt::format("concatenate {} inputs along channels", n.inputs.size()));
  timed_call(ctx, n, "v.concat(kCat_{}, {})", id, ctx.name_literal(n));
  return true;
}

bool emit_add(EmitContext& ctx, const ir::Node& n, size_t i) {
  const std::string& id = ctx.ids[i];
  constant(ctx, "AddCall", "kAdd_" + id,
           {ctx.tensor(n.inputs[0]), ctx.tensor(n.inputs[1]), ctx.tensor(n.output),
            std::to_string(ctx.g.type(n.output).sample_numel())});
  comment(ctx, n, "elementwise add");
  timed_call(ctx, n, "v.add(kAdd_{}, {})", id, ctx.name_literal(n));
  return true;
}

bool emit_view(EmitContext& ctx, const ir::Node& n) {
  comment(ctx, n, "a view of its input (no data movement)");
  return true;
}

namespace {

bool emit_input(EmitContext& ctx, const ir::Node& n, size_t i) {
  const Dims d = dims_of(ctx.g.type(n.output));
  const int64_t stored = ctx.stored_channels(n.output);
  const std::string name = "kIn_" + ctx.ids[i];
  const ir::LayerKind kind = n.lowered->kind;
  if (kind == ir::LayerKind::InputConvert) {
    comment(ctx, n, stored == d.c ? std::string("fp32 NCHW from the caller -> NHWC in the model's precision")
                                  : fmt::format("fp32 NCHW from the caller -> NHWC in the model's "
                                                "precision, {} channels zero-padded to {}",
                                                d.c, stored));
  } else if (kind == ir::LayerKind::InputCopy) {
    comment(ctx, n, "fp32 NCHW from the caller, copied into the arena (plans bind fixed pointers)");
  } else {
    comment(ctx, n, "read in place from the caller's fp32 NCHW buffer");
    return true;
  }
  constant(ctx, "InputCall", name,
           {std::to_string(d.c), std::to_string(d.h), std::to_string(d.w), std::to_string(stored),
            ctx.tensor(n.output)});
  timed_call(ctx, n, "v.{}({})", kind == ir::LayerKind::InputConvert ? "input_to_nhwc" : "input_copy",
             name);
  return true;
}

// The layers that take a snippet of this file, by the runtime layer the lowering chose.
bool emit_by_kind(EmitContext& ctx, const ir::Node& n, size_t i) {
  switch (n.lowered->kind) {
    case ir::LayerKind::InputInPlace:
    case ir::LayerKind::InputCopy:
    case ir::LayerKind::InputConvert: return emit_input(ctx, n, i);
    case ir::LayerKind::ConvLegacy:
    case ir::LayerKind::ConvGraph:
    case ir::LayerKind::ConvDepthwise: return emit_conv(ctx, n, i);
    case ir::LayerKind::LinearGemm:
    case ir::LayerKind::LinearConv: return emit_linear(ctx, n, i);
    case ir::LayerKind::Pool: return emit_pool(ctx, n, i);
    case ir::LayerKind::PoolKernel: return emit_pool_kernel(ctx, n, i);
    case ir::LayerKind::Softmax: return emit_softmax(ctx, n, i);
    case ir::LayerKind::BatchNorm: return emit_batchnorm(ctx, n, i);
    case ir::LayerKind::Add: return emit_add(ctx, n, i);
    case ir::LayerKind::Copy:
      return n.op == ir::OpKind::Concat ? emit_concat(ctx, n, i) : emit_slice_channels(ctx, n, i);
    case ir::LayerKind::View: return emit_view(ctx, n);
    case ir::LayerKind::Activation: return emit_node_activation(ctx, n, i);
    case ir::LayerKind::AdaptivePool:
    case ir::LayerKind::Mul:
    case ir::LayerKind::LayerNorm:
    case ir::LayerKind::Shuffle: return emit_zoo_layer(ctx, n, i);
    case ir::LayerKind::None: break;
  }
  ctx.diags.error(n.loc, fmt::format("layer '{}' ({}): not lowered (run lower-to-target)", n.name,
                                     ir::op_info(n.op).name));
  return false;
}

}  // namespace

bool emit_layer(EmitContext& ctx, const ir::Node& n) {
  const size_t i = static_cast<size_t>(&n - ctx.g.nodes.data());
  const ir::Lowered& l = *n.lowered;
  if (l.weight_offset >= 0) {
    ctx.s.weight_offsets.line("inline constexpr size_t kW_{} = {};", ctx.ids[i], l.weight_offset);
  }
  if (l.bias_offset >= 0) {
    ctx.s.weight_offsets.line("inline constexpr size_t kB_{} = {};", ctx.ids[i], l.bias_offset);
  }
  for (int k : l.joins) {
    ctx.s.layers.line("ZOC_TRY(v.join({}, {}));  // side branch {} done", k, ctx.name_literal(n), k);
  }
  return emit_by_kind(ctx, n, i);
}

}  // namespace zoc::cudnn
