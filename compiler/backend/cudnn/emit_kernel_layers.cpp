// The snippets of the layers cuDNN has no call for, which run zoc's own kernels: channel and
// elementwise multiply (squeeze-and-excitation), layer scale and layer norm (ConvNeXt), channel
// shuffle and channel slices (ShuffleNetV2), constant padding (hgnetv2's stem), adaptive
// average pooling, nearest and bilinear upsampling and softmax over channels (segmentation
// decoders). Each is a call constant and one call of the Run step (zoc/cudnn/kernel_steps.h, shared
// with the trainer, or zoc/cudnn/model_steps.h) into zoc/kernels/layer_kernels.cuh, pad.cuh or
// dense_kernels.cuh (a slice is a strided copy);
// layer scale and layer norm also pack their parameters.
#include "compiler/backend/cudnn/emit_snippet.h"
#include "compiler/backend/cudnn/named_init.h"
#include "compiler/support/sanitize.h"
#include "compiler/weights/weights.h"

namespace zoc::cudnn {

named::ChannelConvGeometry channel_conv_geometry(const EmitContext& ctx, const ir::Node& n) {
  named::ChannelConvGeometry g;
  g.f = ctx.g.type(n.inputs[0]).dims[0], g.out = ctx.g.type(n.output).dims[0];
  g.k = n.attrs.i("kernel"), g.stride = n.attrs.i("stride"), g.padding = n.attrs.i("padding");
  g.dilation = n.attrs.i("dilation");
  return g;
}

named::UpsampleGeometry upsample_geometry(const EmitContext& ctx, const ir::Node& n) {
  const snippet::Dims in = snippet::dims_of(ctx.g.type(n.inputs[0])),
                      out = snippet::dims_of(ctx.g.type(n.output));
  const bool bilinear = n.op == ir::OpKind::UpsampleBilinear;
  auto scale = [&](const char* name) {
    return n.attrs.has(name) ? fmt::format("{:.17g}", n.attrs.f(name)) : std::string("0");
  };
  named::UpsampleGeometry g;
  g.c = in.c, g.h = in.h, g.w = in.w, g.out_h = out.h, g.out_w = out.w;
  g.scale_h = scale("scale_h"), g.scale_w = scale("scale_w"), g.bilinear = bilinear;
  g.align_corners = bilinear && n.attrs.has("align_corners") && n.attrs.b("align_corners");
  g.direct = !bilinear && in.c == 1, g.nhwc = snippet::nhwc_flag(ctx, n.inputs[0]);
  return g;
}

namespace {

using snippet::comment;
using snippet::constant;
using snippet::Dims;
using snippet::dims_of;
using snippet::param;
using snippet::timed_call;

// y = x * s with s of x's shape, a channel vector per sample, or (layer scale) a packed weight.
void mul_call(EmitContext& ctx, const ir::Node& n, size_t i, const std::string& s, bool elementwise,
              bool s_is_weight, const std::string& what) {
  const Dims d = dims_of(ctx.g.type(n.output));
  named::ChannelMulShape m;
  m.c = d.c, m.hw = d.h * d.w, m.nhwc = snippet::nhwc_flag(ctx, n.output);
  m.per_sample = !s_is_weight, m.elementwise = elementwise;
  named::MulCall call;
  call.m = m, call.per_sample = ctx.g.type(n.output).sample_numel();
  call.x = ctx.tensor(n.inputs[0]), call.s = s, call.y = ctx.tensor(n.output);
  call.s_is_weight = s_is_weight;
  constant(ctx, "MulCall", "kMul_" + ctx.ids[i], named::items(call));
  comment(ctx, n, what);
  timed_call(ctx, n, "v.mul(kMul_{}, {})", ctx.ids[i], ctx.name_literal(n));
}

bool emit_mul(EmitContext& ctx, const ir::Node& n, size_t i) {
  const bool elementwise = ctx.g.type(n.inputs[0]).dims == ctx.g.type(n.inputs[1]).dims;
  mul_call(ctx, n, i, ctx.tensor(n.inputs[1]), elementwise, false,
           elementwise ? "elementwise multiply" : "multiply each channel by a per-sample scale");
  return true;
}

bool emit_layer_scale(EmitContext& ctx, const ir::Node& n, size_t i) {
  const ir::ParamSpec* gamma = param(n, ir::ParamRole::kScale);
  const InitChoice init = init_choice(n, *gamma);
  ctx.s.pack.line(
      "ZOC_TRY(zoc::pack_tensor(source, \"{}\", {{{}, 1, 1}}, {}, kDType, staging + kW_{}));",
      sanitize_comment(gamma->name), gamma->shape[0], init_rule_cpp(init.rule), ctx.ids[i]);
  mul_call(ctx, n, i, "kW_" + ctx.ids[i], false, true, "layer scale (x * gamma per channel)");
  return true;
}

// ECA's 1-D convolution over the features: its taps (and bias) packed as fp32.
bool emit_channel_conv(EmitContext& ctx, const ir::Node& n, size_t i) {
  const std::string& id = ctx.ids[i];
  const ir::Attrs& a = n.attrs;
  const ir::ParamSpec* w = param(n, ir::ParamRole::kWeight);
  const ir::ParamSpec* b = param(n, ir::ParamRole::kBias);
  ctx.s.pack.line("// {}", sanitize_comment(ctx.title(n)));
  pack_fp32_param(ctx, n, *w, "kW_" + id);         // [1, 1, k]
  if (b) pack_fp32_param(ctx, n, *b, "kB_" + id);  // [1]
  const int64_t f = ctx.g.type(n.inputs[0]).dims[0];
  named::ChannelConvCall call;
  call.g = channel_conv_geometry(ctx, n);
  call.x = ctx.tensor(n.inputs[0]), call.w = "kW_" + id, call.y = ctx.tensor(n.output);
  if (b) call.b = "kB_" + id;
  constant(ctx, "ChannelConvCall", "kCconv_" + id, named::items(call));
  comment(ctx, n, fmt::format("1-D convolution over {} features, kernel {}", f, a.i("kernel")));
  timed_call(ctx, n, "v.channel_conv(kCconv_{}, {})", id, ctx.name_literal(n));
  return true;
}

// Constant padding, any amount on each side (hgnetv2's stem: one row below, one column right).
bool emit_pad(EmitContext& ctx, const ir::Node& n, size_t i) {
  const Dims in = dims_of(ctx.g.type(n.inputs[0])), out = dims_of(ctx.g.type(n.output));
  named::PadGeometry g;
  g.c = in.c, g.h = in.h, g.w = in.w, g.out_h = out.h, g.out_w = out.w;
  g.top = n.attrs.i("top"), g.left = n.attrs.i("left");
  if (n.attrs.f("value") != 0) g.value = snippet::float_literal(n.attrs.f("value"));
  g.nhwc = snippet::nhwc_flag(ctx, n.inputs[0]);
  named::PadCall call;
  call.g = g, call.x = ctx.tensor(n.inputs[0]), call.y = ctx.tensor(n.output);
  constant(ctx, "PadCall", "kPad_" + ctx.ids[i], named::items(call));
  comment(ctx, n,
          fmt::format("pad {}x{} -> {}x{} (top {}, left {}) with {}", in.h, in.w, out.h, out.w,
                      n.attrs.i("top"), n.attrs.i("left"), static_cast<float>(n.attrs.f("value"))));
  timed_call(ctx, n, "v.pad(kPad_{}, {})", ctx.ids[i], ctx.name_literal(n));
  return true;
}

// A reshape or flatten whose stored order differs (NHWC with channels and pixels): a copy.
bool emit_relayout(EmitContext& ctx, const ir::Node& n, size_t i) {
  const Dims in = dims_of(ctx.g.type(n.inputs[0])), out = dims_of(ctx.g.type(n.output));
  named::RelayoutGeometry g;
  g.c_in = in.c, g.hw_in = in.h * in.w, g.nhwc_in = snippet::nhwc_flag(ctx, n.inputs[0]);
  g.c_out = out.c, g.hw_out = out.h * out.w, g.nhwc_out = snippet::nhwc_flag(ctx, n.output);
  named::RelayoutCall call;
  call.g = g, call.x = ctx.tensor(n.inputs[0]), call.y = ctx.tensor(n.output);
  constant(ctx, "RelayoutCall", "kRelayout_" + ctx.ids[i], named::items(call));
  comment(ctx, n,
          fmt::format("{}x{}x{} -> {}x{}x{} in NCHW order, copied between stored orders", in.c,
                      in.h, in.w, out.c, out.h, out.w));
  timed_call(ctx, n, "v.relayout(kRelayout_{}, {})", ctx.ids[i], ctx.name_literal(n));
  return true;
}

bool emit_layernorm(EmitContext& ctx, const ir::Node& n, size_t i) {
  const std::string& id = ctx.ids[i];
  const Dims d = dims_of(ctx.g.type(n.output));
  const ir::ParamSpec* w = param(n, ir::ParamRole::kNormWeight);
  const ir::ParamSpec* b = param(n, ir::ParamRole::kNormBias);
  ctx.s.pack.line("ZOC_TRY(zoc::pack_layernorm(source, \"{}\", \"{}\", {}, staging + kW_{}));",
                  sanitize_comment(w->name), sanitize_comment(b->name), d.c, id);
  named::LayerNormCall call;
  call.c = d.c, call.hw = d.h * d.w, call.params = "kW_" + id;
  call.eps = snippet::float_literal(n.attrs.f("eps"));
  call.x = ctx.tensor(n.inputs[0]), call.y = ctx.tensor(n.output);
  constant(ctx, "LayerNormCall", "kLn_" + id, named::items(call));
  comment(ctx, n, fmt::format("layer norm over {} channels at each pixel", d.c));
  timed_call(ctx, n, "v.layernorm(kLn_{}, {})", id, ctx.name_literal(n));
  return true;
}

bool emit_channel_shuffle(EmitContext& ctx, const ir::Node& n, size_t i) {
  const Dims d = dims_of(ctx.g.type(n.output));
  const int64_t groups = n.attrs.i("groups");
  named::ShuffleCall call;
  call.c = d.c, call.hw = d.h * d.w, call.groups = groups;
  call.x = ctx.tensor(n.inputs[0]), call.y = ctx.tensor(n.output);
  constant(ctx, "ShuffleCall", "kShuffle_" + ctx.ids[i], named::items(call));
  comment(ctx, n, fmt::format("channel shuffle of {} channels in {} groups", d.c, groups));
  timed_call(ctx, n, "v.shuffle(kShuffle_{}, {})", ctx.ids[i], ctx.name_literal(n));
  return true;
}

bool emit_adaptive_pool(EmitContext& ctx, const ir::Node& n, size_t i) {
  const Dims in = dims_of(ctx.g.type(n.inputs[0])), out = dims_of(ctx.g.type(n.output));
  named::AdaptiveGeometry g;
  g.c = in.c, g.h = in.h, g.w = in.w, g.out_h = out.h, g.out_w = out.w;
  g.nhwc = snippet::nhwc_flag(ctx, n.inputs[0]);
  named::AdaptivePoolCall call;
  call.g = g, call.x = ctx.tensor(n.inputs[0]), call.y = ctx.tensor(n.output);
  constant(ctx, "AdaptivePoolCall", "kPool_" + ctx.ids[i], named::items(call));
  comment(ctx, n,
          n.op == ir::OpKind::GlobalAvgPool
              ? fmt::format("global average pool {}x{} (zoc's kernel)", in.h, in.w)
              : fmt::format("adaptive average pool {}x{} -> {}x{}", in.h, in.w, out.h, out.w));
  timed_call(ctx, n, "v.adaptive_pool(kPool_{}, {})", ctx.ids[i], ctx.name_literal(n));
  return true;
}

// Nearest or bilinear upsampling; the scale factors the layer gave, since PyTorch's ratio is
// 1 / scale for them, not in / out.
bool emit_upsample(EmitContext& ctx, const ir::Node& n, size_t i) {
  const Dims in = dims_of(ctx.g.type(n.inputs[0])), out = dims_of(ctx.g.type(n.output));
  const bool bilinear = n.op == ir::OpKind::UpsampleBilinear;
  const named::UpsampleGeometry g = upsample_geometry(ctx, n);
  const bool corners = bilinear && n.attrs.has("align_corners") && n.attrs.b("align_corners");
  named::UpsampleCall call;
  call.g = g, call.x = ctx.tensor(n.inputs[0]);
  std::string to;
  if (n.lowered && n.lowered->kind == ir::LayerKind::UpsampleOutput) {  // the caller's rows
    const OutputColumns at = output_columns(ctx.g, n.output);
    named::OutputGeometry o;
    o.per_sample = out.c * out.h * out.w, o.c = out.c, o.hw = out.h * out.w;
    o.pitch = at.pitch, o.offset = at.offset;
    call.y = "0", call.out = o;
    to = fmt::format(", to the caller's fp32 NCHW columns {}..{}", at.offset,
                     at.offset + out.c * out.h * out.w - 1);
  } else {
    call.y = ctx.tensor(n.output);
  }
  constant(ctx, "UpsampleCall", "kUp_" + ctx.ids[i], named::items(call));
  comment(
      ctx, n,
      fmt::format("upsample {}, {} channels, {}x{} -> {}x{}{}{}", bilinear ? "bilinear" : "nearest",
                  in.c, in.h, in.w, out.h, out.w, corners ? " (align_corners)" : "", to));
  timed_call(ctx, n, "v.upsample(kUp_{}, {})", ctx.ids[i], ctx.name_literal(n));
  return true;
}

// Softmax or log-softmax over the channels of an image, or (log-softmax) over features.
bool emit_channel_softmax(EmitContext& ctx, const ir::Node& n, size_t i) {
  const ir::TensorType& t = ctx.g.type(n.inputs[0]);
  const bool image = t.dims.size() == 3;
  const bool log = n.op == ir::OpKind::LogSoftmax;
  named::ChannelSoftmaxCall call;
  call.c = t.dims[0], call.hw = image ? t.dims[1] * t.dims[2] : 1, call.log = log;
  call.x = ctx.tensor(n.inputs[0]), call.y = ctx.tensor(n.output);
  constant(ctx, "ChannelSoftmaxCall", "kSoftmax_" + ctx.ids[i], named::items(call));
  comment(ctx, n,
          fmt::format("{} over {} channels{}", log ? "log-softmax" : "softmax", t.dims[0],
                      image ? " at each pixel" : ""));
  timed_call(ctx, n, "v.channel_softmax(kSoftmax_{}, {})", ctx.ids[i], ctx.name_literal(n));
  return true;
}

// Argmax over the channels of an image (a class map) or over features, a model output: its
// indices straight into the caller's rows.
bool emit_argmax(EmitContext& ctx, const ir::Node& n, size_t i) {
  const ir::TensorType& t = ctx.g.type(n.inputs[0]);
  const bool image = t.dims.size() == 3;
  const OutputColumns at = output_columns(ctx.g, n.output);
  const int64_t hw = image ? t.dims[1] * t.dims[2] : 1;
  named::OutputGeometry o;
  o.per_sample = hw, o.c = 1, o.hw = hw;
  o.pitch = at.pitch, o.offset = at.offset;
  named::ArgmaxCall call;
  call.c = t.dims[0], call.x = ctx.tensor(n.inputs[0]), call.out = o;
  constant(ctx, "ArgmaxCall", "kArgmax_" + ctx.ids[i], named::items(call));
  comment(ctx, n,
          fmt::format("argmax over {} channels{}, indices as fp32 to the caller's "
                      "columns {}..{}",
                      t.dims[0], image ? " at each pixel" : "", at.offset, at.offset + hw - 1));
  timed_call(ctx, n, "v.argmax(kArgmax_{}, {})", ctx.ids[i], ctx.name_literal(n));
  return true;
}

}  // namespace

bool emit_kernel_layer(EmitContext& ctx, const ir::Node& n, size_t i) {
  switch (n.op) {
    case ir::OpKind::Mul:
      return emit_mul(ctx, n, i);
    case ir::OpKind::LayerScale:
      return emit_layer_scale(ctx, n, i);
    case ir::OpKind::LayerNorm:
      return emit_layernorm(ctx, n, i);
    case ir::OpKind::ChannelShuffle:
      return emit_channel_shuffle(ctx, n, i);
    case ir::OpKind::AdaptiveAvgPool2d:
    case ir::OpKind::GlobalAvgPool:  // an adaptive pool to 1x1 where the lowering chose it
      return emit_adaptive_pool(ctx, n, i);
    case ir::OpKind::UpsampleNearest:
    case ir::OpKind::UpsampleBilinear:
      return emit_upsample(ctx, n, i);
    case ir::OpKind::Softmax:
    case ir::OpKind::LogSoftmax:
      return emit_channel_softmax(ctx, n, i);
    case ir::OpKind::Argmax:
      return emit_argmax(ctx, n, i);
    case ir::OpKind::Pad:
      return emit_pad(ctx, n, i);
    case ir::OpKind::ChannelConv1d:
      return emit_channel_conv(ctx, n, i);
    case ir::OpKind::Reshape:
    case ir::OpKind::Flatten:
      return emit_relayout(ctx, n, i);
    default:
      break;
  }
  ctx.diags.error(n.loc, fmt::format("layer '{}' ({}): not a layer of zoc's kernels",
                                     shown_text(n.name), ir::op_info(n.op).name));
  return false;
}

// Channels [start, start + count) as one strided copy: per pixel (NHWC) or per sample (NCHW).
bool emit_slice_channels(EmitContext& ctx, const ir::Node& n, size_t i) {
  const Dims in = dims_of(ctx.g.type(n.inputs[0]));
  const int64_t start = n.attrs.i("start"), count = n.attrs.i("count");
  const auto [unit, rows] = snippet::copy_rows(ctx, n.inputs[0]);
  const int64_t src_pitch = ctx.stored_channels(n.inputs[0]) * unit;
  named::CopyCall part;
  part.src = ctx.tensor(n.inputs[0]), part.y = ctx.tensor(n.output);
  part.dst_offset = 0, part.dst_pitch = count * unit, part.src_pitch = src_pitch;
  part.width = count * unit, part.rows = rows, part.src_offset = start * unit;
  ctx.s.constants.line("constexpr zoc::CopyCall kSlice_{}[] = {{", ctx.ids[i]);
  ctx.s.constants.wrapped("    {", named::items(part), "},");
  ctx.s.constants.line("}};");
  comment(ctx, n, fmt::format("channels {}..{} of {}", start, start + count - 1, in.c));
  timed_call(ctx, n, "v.concat(kSlice_{}, {})", ctx.ids[i], ctx.name_literal(n));
  return true;
}

}  // namespace zoc::cudnn
