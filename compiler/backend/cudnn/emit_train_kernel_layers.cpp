// The trainer's snippets of the layers zoc's own kernels run (beside emit_train_layers.cpp's,
// which sends these ops here): layer scale, layer norm and ECA's 1-D convolution read their
// parameters from params() and run inference's forward kernels for float; the backwards of mul,
// layer scale, layer norm, adaptive pooling and ECA's convolution run
// zoc/kernels/layer_grad_kernels.cuh, as do upsampling's; channel slices' and padding's backwards
// are copies. (Mul, channel shuffle, adaptive pooling, padding and upsampling forward print
// inference's snippets, emit_kernel_layers.cpp, fp32 NCHW here.)
#include <fmt/format.h>

#include "compiler/backend/cudnn/emit_snippet.h"
#include "compiler/backend/cudnn/named_init.h"
#include "compiler/backend/cudnn/train_emitter.h"
#include "compiler/support/sanitize.h"

namespace zoc::cudnn {
namespace {

using snippet::constant;
using snippet::Dims;
using snippet::dims_of;
using train_snippet::call;
using train_snippet::forward_of;
using train_snippet::grad_of;
using train_snippet::needed;
using train_snippet::param_offset;

bool emit_train_layer_scale(EmitContext& ctx, const ir::Node& n, size_t i) {
  const Dims d = dims_of(ctx.g.type(n.output));
  named::ChannelMulShape m;
  m.c = d.c, m.hw = d.h * d.w;
  named::MulCall c;
  c.m = m, c.per_sample = ctx.g.type(n.output).sample_numel(), c.x = ctx.tensor(n.inputs[0]);
  c.s = param_offset(ctx, n, ir::ParamRole::kScale), c.y = ctx.tensor(n.output);
  c.s_is_weight = true;
  constant(ctx, "MulCall", "kMul_" + ctx.ids[i], named::items(c));
  call(ctx, n, "layer scale (x * gamma per channel)",
       fmt::format("v.mul(kMul_{}, {})", ctx.ids[i], ctx.name_literal(n)));
  return true;
}

bool emit_train_layernorm(EmitContext& ctx, const ir::Node& n, size_t i) {
  const Dims d = dims_of(ctx.g.type(n.output));
  named::LayerNormTrainCall c;
  c.c = d.c, c.hw = d.h * d.w, c.eps = snippet::float_literal(n.attrs.f("eps"));
  c.x = ctx.tensor(n.inputs[0]), c.y = ctx.tensor(n.output);
  c.gamma = param_offset(ctx, n, ir::ParamRole::kNormWeight);
  c.beta = param_offset(ctx, n, ir::ParamRole::kNormBias);
  constant(ctx, "train::LayerNormTrainCall", "kLn_" + ctx.ids[i], named::items(c));
  call(ctx, n, fmt::format("layer norm over {} channels{}", d.c, d.h * d.w > 1 ? " per pixel" : ""),
       fmt::format("v.layernorm(kLn_{}, {})", ctx.ids[i], ctx.name_literal(n)));
  return true;
}

// (a, b, dy) -> da; extra db. b is a's shape or (squeeze-and-excitation) its channel vector.
bool emit_train_mul_grad(EmitContext& ctx, const ir::Node& n, size_t i) {
  const Dims d = dims_of(ctx.g.type(n.inputs[0]));
  const bool same = ctx.g.type(n.inputs[0]).dims == ctx.g.type(n.inputs[1]).dims;
  named::ChannelMulShape m;
  m.c = d.c, m.hw = d.h * d.w, m.per_sample = !same, m.elementwise = same;
  named::MulGradCall c;
  c.m = m, c.a = ctx.tensor(n.inputs[0]), c.b = ctx.tensor(n.inputs[1]);
  c.dy = ctx.tensor(n.inputs[2]), c.da = needed(ctx, n.output);
  c.db = needed(ctx, n.extra_outputs.at(0));
  constant(ctx, "train::MulGradCall", "kMulGrad_" + ctx.ids[i], named::items(c));
  call(
      ctx, n, same ? "da = dy * b; db = dy * a" : "da = dy * s; ds = sum over pixels of dy * a",
      fmt::format("v.mul_grad(kMulGrad_{}, {})", ctx.ids[i], ctx.name_literal(forward_of(ctx, n))));
  return true;
}

// layer_scale's, or an add's, sub's, mul's or div's by a parameter of the weights file (its
// operand: per channel or feature, or one value, over the whole sample).
bool emit_train_operand_grad(EmitContext& ctx, const ir::Node& n, size_t i) {
  const ir::Node& f = forward_of(ctx, n);
  const ir::ParamRole role = n.params.at(0).role;
  const Dims d = dims_of(ctx.g.type(n.output));
  const bool one = n.op == ir::OpKind::OperandGrad && ir::one_value_operand(n);
  const bool reverse = n.attrs.flag("reverse");
  const ir::OpKind op = n.op == ir::OpKind::OperandGrad ? f.op : ir::OpKind::Mul;
  named::OperandGradCall c;
  c.op = const_op_kind(op), c.reverse = reverse;
  c.c = one ? 1 : d.c, c.hw = one ? d.c * d.h * d.w : d.h * d.w;
  c.x = ctx.tensor(n.inputs[0]), c.dy = ctx.tensor(n.inputs[1]);
  c.v = param_offset(ctx, f, role), c.dx = ctx.tensor(n.output), c.dv = grad_of(ctx, n, role);
  constant(ctx, "train::OperandGradCall", "kOpGrad_" + ctx.ids[i], named::items(c));
  const char* what = op == ir::OpKind::Add              ? "dx = dy; dv = sum of dy"
                     : op == ir::OpKind::Sub && reverse ? "dx = -dy; dv = sum of dy"
                     : op == ir::OpKind::Sub            ? "dx = dy; dv = -(sum of dy)"
                     : op == ir::OpKind::Div && reverse ? "dx = -dy * v / x^2; dv = sum of dy / x"
                     : op == ir::OpKind::Div            ? "dx = dy / v; dv = -(sum of dy * x) / v^2"
                                                        : "dx = dy * v; dv = sum of dy * x";
  call(ctx, n, what,
       fmt::format("v.operand_grad(kOpGrad_{}, {})", ctx.ids[i], ctx.name_literal(f)));
  return true;
}

bool emit_train_layernorm_grad(EmitContext& ctx, const ir::Node& n, size_t i) {
  const ir::Node& f = forward_of(ctx, n);
  const Dims d = dims_of(ctx.g.type(n.output));
  named::LayerNormGradCall c;
  c.c = d.c, c.hw = d.h * d.w, c.eps = snippet::float_literal(f.attrs.f("eps"));
  c.x = ctx.tensor(n.inputs[0]), c.dy = ctx.tensor(n.inputs[1]);
  c.gamma = param_offset(ctx, f, ir::ParamRole::kNormWeight), c.dx = ctx.tensor(n.output);
  c.dgamma = grad_of(ctx, n, ir::ParamRole::kNormWeight);
  c.dbeta = grad_of(ctx, n, ir::ParamRole::kNormBias);
  constant(ctx, "train::LayerNormGradCall", "kLnGrad_" + ctx.ids[i], named::items(c));
  call(ctx, n, "dx = LN'(dy) (statistics recomputed from x); dgamma, dbeta",
       fmt::format("v.layernorm_grad(kLnGrad_{}, {})", ctx.ids[i], ctx.name_literal(f)));
  return true;
}

bool emit_train_adaptive_pool_grad(EmitContext& ctx, const ir::Node& n, size_t i) {
  const Dims in = dims_of(ctx.g.type(n.inputs[0])), out = dims_of(ctx.g.type(n.inputs[1]));
  named::AdaptiveGeometry g;
  g.c = in.c, g.h = in.h, g.w = in.w, g.out_h = out.h, g.out_w = out.w;
  named::AdaptivePoolGradCall c;
  c.g = g, c.dy = ctx.tensor(n.inputs[1]), c.dx = ctx.tensor(n.output);
  constant(ctx, "train::AdaptivePoolGradCall", "kPoolGrad_" + ctx.ids[i], named::items(c));
  call(ctx, n,
       fmt::format("dx = adaptive_avgpool2d'(dy), {}x{} -> {}x{}", out.h, out.w, in.h, in.w),
       fmt::format("v.adaptive_pool_grad(kPoolGrad_{}, {})", ctx.ids[i],
                   ctx.name_literal(forward_of(ctx, n))));
  return true;
}

// slice_channels's backward: dy at channels [start, start + count) of zeros.
bool emit_train_pad_channels(EmitContext& ctx, const ir::Node& n, size_t i) {
  const Dims d = dims_of(ctx.g.type(n.inputs[0]));
  named::PadChannelsCall c;
  c.channels = n.attrs.i("channels"), c.start = n.attrs.i("start"), c.count = d.c;
  c.hw = d.h * d.w, c.dy = ctx.tensor(n.inputs[0]), c.dx = ctx.tensor(n.output);
  constant(ctx, "train::PadChannelsCall", "kPadCh_" + ctx.ids[i], named::items(c));
  call(ctx, n,
       fmt::format("dy into channels {}..{} of {} zeros", n.attrs.i("start"),
                   n.attrs.i("start") + d.c - 1, n.attrs.i("channels")),
       fmt::format("v.pad_channels(kPadCh_{}, {})", ctx.ids[i], ctx.name_literal(n)));
  return true;
}

// ECA's 1-D convolution: inference's kernel with the taps and bias in params(); its backward
// zoc/kernels/layer_grad_kernels.cuh's.
bool emit_train_channel_conv(EmitContext& ctx, const ir::Node& n, size_t i) {
  named::ChannelConvCall c;
  c.g = channel_conv_geometry(ctx, n), c.x = ctx.tensor(n.inputs[0]);
  c.w = param_offset(ctx, n, ir::ParamRole::kWeight);
  c.b = param_offset(ctx, n, ir::ParamRole::kBias), c.y = ctx.tensor(n.output);
  constant(ctx, "ChannelConvCall", "kCconv_" + ctx.ids[i], named::items(c));
  call(ctx, n,
       fmt::format("1-D convolution over {} features, kernel {}", ctx.g.type(n.inputs[0]).dims[0],
                   n.attrs.i("kernel")),
       fmt::format("v.channel_conv(kCconv_{}, {})", ctx.ids[i], ctx.name_literal(n)));
  return true;
}

bool emit_train_channel_conv_grad(EmitContext& ctx, const ir::Node& n, size_t i) {
  const ir::Node& f = forward_of(ctx, n);
  named::ChannelConvGradCall c;
  c.g = channel_conv_geometry(ctx, f), c.x = ctx.tensor(n.inputs[0]);
  c.dy = ctx.tensor(n.inputs[1]), c.w = param_offset(ctx, f, ir::ParamRole::kWeight);
  c.dx = needed(ctx, n.output), c.dw = grad_of(ctx, n, ir::ParamRole::kWeight);
  c.db = grad_of(ctx, n, ir::ParamRole::kBias);
  constant(ctx, "train::ChannelConvGradCall", "kCconvGrad_" + ctx.ids[i], named::items(c));
  call(ctx, n, "dx = conv1d^T(dy); dw, db",
       fmt::format("v.channel_conv_grad(kCconvGrad_{}, {})", ctx.ids[i], ctx.name_literal(f)));
  return true;
}

// pad's backward: dy without the rows and columns the forward added, one strided copy (the
// forward's PadCall, read from dy into dx).
bool emit_train_pad_grad(EmitContext& ctx, const ir::Node& n, size_t i) {
  const Dims dy = dims_of(ctx.g.type(n.inputs[0])), dx = dims_of(ctx.g.type(n.output));
  named::PadGeometry g;
  g.c = dx.c, g.h = dx.h, g.w = dx.w, g.out_h = dy.h, g.out_w = dy.w;
  g.top = n.attrs.i("top"), g.left = n.attrs.i("left"), g.nhwc = "false";
  named::PadCall c;
  c.g = g, c.x = ctx.tensor(n.inputs[0]), c.y = ctx.tensor(n.output);
  constant(ctx, "PadCall", "kPadGrad_" + ctx.ids[i], named::items(c));
  call(
      ctx, n,
      fmt::format("dx = dy {}x{} without the padding (top {}, left {})", dy.h, dy.w,
                  n.attrs.i("top"), n.attrs.i("left")),
      fmt::format("v.pad_grad(kPadGrad_{}, {})", ctx.ids[i], ctx.name_literal(forward_of(ctx, n))));
  return true;
}

// upsampling's backward: each dx pixel gathers the dy of the outputs that read it.
bool emit_train_upsample_grad(EmitContext& ctx, const ir::Node& n, size_t i) {
  const ir::Node& f = forward_of(ctx, n);
  const Dims dy = dims_of(ctx.g.type(n.inputs[1])), dx = dims_of(ctx.g.type(n.output));
  named::UpsampleGradCall c;
  c.g = upsample_geometry(ctx, f), c.dy = ctx.tensor(n.inputs[1]), c.dx = ctx.tensor(n.output);
  constant(ctx, "train::UpsampleGradCall", "kUpGrad_" + ctx.ids[i], named::items(c));
  call(ctx, n,
       fmt::format("dx = {}'(dy), {}x{} -> {}x{}", ir::op_info(f.op).name, dy.h, dy.w, dx.h, dx.w),
       fmt::format("v.upsample_grad(kUpGrad_{}, {})", ctx.ids[i], ctx.name_literal(f)));
  return true;
}

// softmax's and log_softmax's backward from their output, over features or each pixel's channels.
bool emit_train_softmax_grad(EmitContext& ctx, const ir::Node& n, size_t i) {
  const ir::TensorType& t = ctx.g.type(n.output);
  const bool log = n.op == ir::OpKind::LogSoftmaxGrad;
  named::SoftmaxGradCall c;
  c.c = t.dims[0], c.hw = t.dims.size() == 3 ? t.dims[1] * t.dims[2] : 1, c.log = log;
  c.y = ctx.tensor(n.inputs[0]), c.dy = ctx.tensor(n.inputs[1]), c.dx = ctx.tensor(n.output);
  constant(ctx, "train::SoftmaxGradCall", "kSoftmaxGrad_" + ctx.ids[i], named::items(c));
  call(ctx, n, log ? "dx = dy - exp(y) * sum(dy)" : "dx = y * (dy - sum(dy * y))",
       fmt::format("v.softmax_grad(kSoftmaxGrad_{}, {})", ctx.ids[i],
                   ctx.name_literal(forward_of(ctx, n))));
  return true;
}

}  // namespace

bool emit_train_kernel_layer(EmitContext& ctx, const ir::Node& n, size_t i) {
  switch (n.op) {
    case ir::OpKind::LayerScale:
      return emit_train_layer_scale(ctx, n, i);
    case ir::OpKind::LayerNorm:
      return emit_train_layernorm(ctx, n, i);
    case ir::OpKind::ChannelConv1d:
      return emit_train_channel_conv(ctx, n, i);
    case ir::OpKind::MulGrad:
      return emit_train_mul_grad(ctx, n, i);
    case ir::OpKind::LayerScaleGrad:
    case ir::OpKind::OperandGrad:
      return emit_train_operand_grad(ctx, n, i);
    case ir::OpKind::LayerNormGrad:
      return emit_train_layernorm_grad(ctx, n, i);
    case ir::OpKind::AdaptiveAvgPool2dGrad:
      return emit_train_adaptive_pool_grad(ctx, n, i);
    case ir::OpKind::ChannelConv1dGrad:
      return emit_train_channel_conv_grad(ctx, n, i);
    case ir::OpKind::PadChannels:
      return emit_train_pad_channels(ctx, n, i);
    case ir::OpKind::PadGrad:
      return emit_train_pad_grad(ctx, n, i);
    case ir::OpKind::UpsampleNearestGrad:
    case ir::OpKind::UpsampleBilinearGrad:
      return emit_train_upsample_grad(ctx, n, i);
    case ir::OpKind::SoftmaxGrad:
    case ir::OpKind::LogSoftmaxGrad:
      return emit_train_softmax_grad(ctx, n, i);
    default:
      break;
  }
  ctx.diags.error(n.loc, fmt::format("layer '{}' ({}): not a trainer kernel layer",
                                     shown_text(n.name), ir::op_info(n.op).name));
  return false;
}

}  // namespace zoc::cudnn
