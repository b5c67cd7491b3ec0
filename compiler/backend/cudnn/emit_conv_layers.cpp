// The snippets of the convolution-shaped layers: fused convolutions (cuDNN's legacy call or a
// graph-API plan, on the main or the side stream), depthwise ones through zoc's kernel, and
// linear layers (cuBLAS, or a convolution whose filter covers the input). Each prints what the
// lowering decided (compiler/ir/lowering.h): its layer kind, where its activation runs, its
// stored input channels and its weight layout; the constants by field name (named_init.h).
#include <fmt/format.h>

#include "compiler/backend/cudnn/emit_snippet.h"
#include "compiler/backend/cudnn/named_init.h"
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

const ir::FusedActivation* activation_of(const ir::Node& n) {
  return ir::fused_activation(static_cast<int>(n.attrs.i("activation")));
}

// "conv 3x3/2, 64->128, 56x56 -> 28x28"
std::string conv_summary(const EmitContext& ctx, const ir::Node& n) {
  const Dims in = dims_of(ctx.g.type(n.inputs[0]));
  const Dims out = dims_of(ctx.g.type(n.output));
  const ir::Pair k = n.attrs.pair("kernel"), s = n.attrs.pair("stride");
  std::string text = fmt::format("conv {}x{}/{}, {}->{}, {}x{} -> {}x{}", k.h, k.w, s.h, in.c,
                                 out.c, in.h, in.w, out.h, out.w);
  if (n.attrs.i("groups") > 1) text += fmt::format(", groups {}", n.attrs.i("groups"));
  if (n.inputs.size() == 2) text += ", + residual";
  if (const ir::FusedActivation* a = activation_of(n)) {
    text += fmt::format(", {}", ir::op_info(a->op).name);
  }
  return text;
}

// The node that waits for side branch k.
const ir::Node* join_of(const EmitContext& ctx, int k) {
  for (const ir::Node& n : ctx.g.nodes) {
    for (int w : n.lowered->joins) {
      if (w == k) return &n;
    }
  }
  return nullptr;
}

// A fused convolution's shape as cuDNN sees it: its input's stored channels, its filter, its
// output, ReLU in the epilogue or (a graph-API convolution's) another fused activation.
named::ConvShape conv_shape(const EmitContext& ctx, const ir::Node& n) {
  const Dims in = dims_of(ctx.g.type(n.inputs[0]));
  const Dims out = dims_of(ctx.g.type(n.output));
  const ir::Pair k = n.attrs.pair("kernel"), s = n.attrs.pair("stride"),
                 p = n.attrs.pair("padding"), d = n.attrs.pair("dilation");
  named::ConvShape shape;
  shape.c = ctx.stored_channels(n.inputs[0]), shape.h = in.h, shape.w = in.w;
  shape.k = out.c, shape.r = k.h, shape.s = k.w;
  shape.pad_h = p.h, shape.pad_w = p.w, shape.stride_h = s.h, shape.stride_w = s.w;
  shape.dil_h = d.h, shape.dil_w = d.w, shape.groups = n.attrs.i("groups");
  shape.out_h = out.h, shape.out_w = out.w;
  const ir::FusedActivation* a = activation_of(n);
  shape.relu = a && a->op == ir::OpKind::Relu;
  if (a && a->op != ir::OpKind::Relu && n.lowered->epilogue == ir::Epilogue::kFused) {
    shape.other_activation = true;
    shape.activation = fmt::format("zoc::act::Kind::k{}", a->math);
    const act::Params params = ir::fused_activation_params(n);
    if (params.a != 0 || params.b != 0) shape.activation_params = activation_params_text(params);
  }
  return shape;
}

// A convolution's tensors (ZOC_FIELDS_ConvTensors): its input, packed filter and bias, the
// residual where there is one, its output.
template <class Call>
void set_tensors(const EmitContext& ctx, const ir::Node& n, const std::string& id, Call& call) {
  call.x = ctx.tensor(n.inputs[0]);
  call.w = "kW_" + id;
  call.b = "kB_" + id;
  if (n.inputs.size() == 2) call.z = ctx.tensor(n.inputs[1]);
  call.y = ctx.tensor(n.output);
}

// Everything of a fused convolution except its weight packing: the call constant, the
// descriptor bundle (legacy or graph API, as lowered) and the call, on the side stream where the
// lowering put it. `summary` is the sequence's comment.
void emit_conv_call(EmitContext& ctx, const ir::Node& n, size_t i, const named::ConvShape& shape,
                    const std::string& summary) {
  const std::string& id = ctx.ids[i];
  named::ConvCall call;
  call.shape = shape;
  set_tensors(ctx, n, id, call);
  constant(ctx, "ConvCall", "kConv_" + id, named::items(call));
  const bool graph = n.lowered->kind == ir::LayerKind::ConvGraph;
  snippet::member(ctx, graph ? "GraphConvLayer" : "ConvLayer", id, ctx.title(n));
  comment(ctx, n, summary);
  const int side = n.lowered->side_branch;
  if (side >= 0) {
    ctx.s.layers.line("// ... on the side stream, beside the main branch until layer {} joins it",
                      sanitize_comment(join_of(ctx, side)->name));
    timed_call(ctx, n, "v.side_conv({}_, kConv_{}, {}, {})", id, id, side, ctx.name_literal(n));
  } else {
    timed_call(ctx, n, "v.conv({}_, kConv_{}, {})", id, id, ctx.name_literal(n));
  }
}

// A depthwise convolution through zoc's kernel (zoc/kernels/depthwise.cuh), its epilogue fused.
void emit_depthwise_call(EmitContext& ctx, const ir::Node& n, size_t i) {
  const std::string& id = ctx.ids[i];
  const named::ConvShape s = conv_shape(ctx, n);
  named::DepthwiseGeometry g;
  g.c = s.c, g.h = s.h, g.w = s.w, g.out_h = s.out_h, g.out_w = s.out_w, g.kh = s.r, g.kw = s.s;
  g.stride_h = s.stride_h, g.stride_w = s.stride_w, g.pad_h = s.pad_h, g.pad_w = s.pad_w;
  g.dil_h = s.dil_h, g.dil_w = s.dil_w, g.nhwc = snippet::nhwc_flag(ctx, n.inputs[0]);
  if (const ir::FusedActivation* a = activation_of(n)) {
    g.activation = true;
    g.kind = fmt::format("zoc::act::Kind::k{}", a->math);
  }
  const act::Params params = ir::fused_activation_params(n);
  if (params.a != 0 || params.b != 0) g.params = activation_params_text(params);  // else {0, 0}
  named::DepthwiseCall call;
  call.g = g;
  set_tensors(ctx, n, id, call);
  constant(ctx, "DepthwiseCall", "kDw_" + id, named::items(call));
  comment(ctx, n, conv_summary(ctx, n) + " (zoc's depthwise kernel)");
  timed_call(ctx, n, "v.depthwise(kDw_{}, {})", id, ctx.name_literal(n));
}

// The convolution's weight packing: BN folded, in the lowered weight layout, its input channels
// padded to the stored ones.
void pack_conv(EmitContext& ctx, const ir::Node& n, size_t i) {
  const std::string& id = ctx.ids[i];
  const int64_t groups = n.attrs.i("groups");
  const ir::Pair k = n.attrs.pair("kernel");
  named::ConvPackSpec spec;
  spec.weight = cstr(param(n, ir::ParamRole::kWeight));
  spec.bias = cstr(param(n, ir::ParamRole::kBias));
  if (const ir::ParamSpec* bn_w = param(n, ir::ParamRole::kBnWeight)) {  // "<bn>.weight"
    spec.bn = fmt::format("\"{}\"", sanitize_comment(bn_w->name.substr(0, bn_w->name.size() - 7)));
  }
  spec.eps = fmt::format("{:.9g}", n.attrs.has("bn_eps") ? n.attrs.f("bn_eps") : 0.0);
  spec.k = dims_of(ctx.g.type(n.output)).c;
  spec.c = dims_of(ctx.g.type(n.inputs[0])).c / groups;
  spec.r = k.h, spec.s = k.w;
  const ir::WeightLayout layout = n.lowered->weights;
  spec.nhwc = layout == ir::WeightLayout::kTapsMajor || layout == ir::WeightLayout::kKRSC;
  spec.c_padded = ctx.stored_channels(n.inputs[0]) / groups;
  spec.dtype = "kDType";
  spec.weight_2d = n.attrs.flag("weight_2d");
  spec.taps_major = layout == ir::WeightLayout::kTapsMajor;
  ctx.s.pack.line("// {}", sanitize_comment(ctx.title(n)));
  ctx.s.pack.wrapped(
      "ZOC_TRY(zoc::pack_conv(source,",
      snippet::call_args(named::items(spec), {"staging + kW_" + id, "staging + kB_" + id}), "));");
}

}  // namespace

std::string activation_params_text(const act::Params& p) {
  return fmt::format("{{{:.9g}, {:.9g}}}", p.a, p.b);
}

bool emit_conv(EmitContext& ctx, const ir::Node& n, size_t i) {
  pack_conv(ctx, n, i);
  if (n.lowered->kind == ir::LayerKind::ConvDepthwise) {
    emit_depthwise_call(ctx, n, i);
    return true;
  }
  emit_conv_call(ctx, n, i, conv_shape(ctx, n), conv_summary(ctx, n));
  // An activation the convolution's epilogue lacks (the legacy call fuses ReLU only; cuDNN's
  // pointwise operations have no hardswish): the model's activation kernel, in place on the
  // conv's output.
  if (n.lowered->epilogue == ir::Epilogue::kSeparate) {
    const ir::FusedActivation* a = activation_of(n);
    emit_activation(ctx, n, i, fmt::format("zoc::act::Kind::k{}", a->math),
                    ir::fused_activation_params(n), n.output,
                    fmt::format("{} of {}, in place", ir::op_info(a->op).name, n.name));
  }
  return true;
}

// A transposed convolution (zoc/cudnn/transpose_layer.h): its ConvShape is the forward
// convolution it is the data gradient of (input and output swapped); output_padding is in the
// output size already.
bool emit_conv_transpose(EmitContext& ctx, const ir::Node& n, size_t i) {
  const std::string& id = ctx.ids[i];
  const Dims in = dims_of(ctx.g.type(n.inputs[0])), out = dims_of(ctx.g.type(n.output));
  const int64_t groups = n.attrs.i("groups");
  const ir::Pair k = n.attrs.pair("kernel"), s = n.attrs.pair("stride"),
                 p = n.attrs.pair("padding"), d = n.attrs.pair("dilation");
  const ir::ParamSpec* bias = param(n, ir::ParamRole::kBias);
  named::ConvPackSpec spec;
  spec.weight = cstr(param(n, ir::ParamRole::kWeight));
  spec.bias = cstr(bias);
  spec.k = in.c, spec.c = out.c / groups, spec.c_padded = out.c / groups;
  spec.r = k.h, spec.s = k.w, spec.dtype = "kDType";
  spec.nhwc = n.lowered->weights == ir::WeightLayout::kKRSC;
  ctx.s.pack.line("// {}", sanitize_comment(ctx.title(n)));
  ctx.s.pack.wrapped(
      "ZOC_TRY(zoc::pack_conv_transpose(source,",
      snippet::call_args(named::items(spec), {std::to_string(out.c), "staging + kW_" + id,
                                              bias ? "staging + kB_" + id : "nullptr"}),
      "));");
  named::ConvShape shape;
  shape.c = out.c, shape.h = out.h, shape.w = out.w, shape.k = in.c, shape.r = k.h;
  shape.s = k.w, shape.pad_h = p.h, shape.pad_w = p.w, shape.stride_h = s.h;
  shape.stride_w = s.w, shape.dil_h = d.h, shape.dil_w = d.w, shape.groups = groups;
  shape.out_h = in.h, shape.out_w = in.w;
  named::ConvCall call;
  call.shape = shape, call.x = ctx.tensor(n.inputs[0]), call.w = "kW_" + id;
  call.b = bias ? "kB_" + id : "zoc::kNoTensor", call.y = ctx.tensor(n.output);
  constant(ctx, "ConvCall", "kConvT_" + id, named::items(call));
  snippet::member(ctx, "ConvTransposeLayer", id, ctx.title(n));
  std::string summary = fmt::format("transposed conv {}x{}/{}, {}->{}, {}x{} -> {}x{}", k.h, k.w,
                                    s.h, in.c, out.c, in.h, in.w, out.h, out.w);
  if (groups > 1) summary += fmt::format(", groups {}", groups);
  comment(ctx, n, summary + (bias ? ", + bias" : ""));
  timed_call(ctx, n, "v.conv_transpose({}_, kConvT_{}, {})", id, id, ctx.name_literal(n));
  return true;
}

bool emit_linear(EmitContext& ctx, const ir::Node& n, size_t i) {
  const std::string& id = ctx.ids[i];
  const int64_t in = ctx.g.type(n.inputs[0]).dims[0];
  const int64_t out = ctx.g.type(n.output).dims[0];
  const ir::Node& src = ctx.g.producer(n.inputs[0]);
  const ir::ParamSpec* bias = param(n, ir::ParamRole::kBias);
  // Features flattened from an NHWC image are in (h, w, c) order on the device: the lowering
  // packs the weight's columns in that order (WeightLayout::kRowsHWC).
  const bool hwc = n.lowered->weights == ir::WeightLayout::kRowsHWC;
  named::LinearPackSpec spec;
  spec.weight = cstr(param(n, ir::ParamRole::kWeight));
  spec.bias = cstr(bias);
  spec.out = out, spec.in = in;
  if (hwc) {
    const Dims d = dims_of(ctx.g.type(src.inputs[0]));
    spec.hwc_c = d.c, spec.hwc_h = d.h, spec.hwc_w = d.w;
  }
  spec.dtype = "kDType";
  ctx.s.pack.line("// {}", sanitize_comment(ctx.title(n)));
  ctx.s.pack.wrapped(
      "ZOC_TRY(zoc::pack_linear(source,",
      snippet::call_args(
          named::items(spec),
          {"staging + kW_" + id, n.lowered->bias_offset >= 0 ? "staging + kB_" + id : "nullptr"}),
      "));");
  if (n.lowered->kind == ir::LayerKind::LinearConv) {
    // The packed [out, in] matrix is the filter of a convolution over the image the features
    // were flattened from (in the stored layout's order: KRSC for NHWC, KCRS for NCHW), or over
    // a 1x1 image of `in` channels. One output pixel: the [N, out] result.
    const Dims d =
        src.op == ir::OpKind::Flatten ? dims_of(ctx.g.type(src.inputs[0])) : Dims{in, 1, 1};
    named::ConvShape shape;
    shape.c = d.c, shape.h = d.h, shape.w = d.w, shape.k = out, shape.r = d.h, shape.s = d.w;
    emit_conv_call(
        ctx, n, i, shape,
        fmt::format("linear {} -> {}, as a cuDNN convolution with a {}x{}x{} filter{}", in, out,
                    d.c, d.h, d.w, bias ? " and the bias in its epilogue" : ""));
    return true;
  }
  named::LinearCall call;
  call.in = in, call.out = out, call.w = "kW_" + id;
  if (bias) call.b = "kB_" + id;
  call.x = ctx.tensor(n.inputs[0]), call.y = ctx.tensor(n.output);
  constant(ctx, "LinearCall", "kFc_" + id, named::items(call));
  comment(ctx, n,
          fmt::format("linear {} -> {}{}", in, out,
                      hwc ? " (columns permuted to the NHWC flatten order)" : ""));
  timed_call(ctx, n, "v.linear(kFc_{}, {})", id, ctx.name_literal(n));
  return true;
}

}  // namespace zoc::cudnn
