// The snippets of the layers the torchvision zoo adds and cuDNN has no call for: channel and
// elementwise multiply (squeeze-and-excitation), layer scale and layer norm (ConvNeXt), channel
// shuffle and channel slices (ShuffleNetV2), adaptive average pooling. Each is a call constant
// and one call of zoc/cudnn/model_steps.h's Run step into zoc/core/layer_kernels.cuh (a slice is
// a strided copy); layer scale and layer norm also pack their parameters.
#include "compiler/backend/cudnn/emit_snippet.h"
#include "compiler/weights/weights.h"

namespace zoc::cudnn {
namespace {

using snippet::comment;
using snippet::constant;
using snippet::Dims;
using snippet::dims_of;
using snippet::param;
using snippet::timed_call;

const char* flag(bool b) { return b ? "true" : "false"; }

// y = x * s with s of x's shape, a channel vector per sample, or (layer scale) a packed weight.
void mul_call(EmitContext& ctx, const ir::Node& n, size_t i, const std::string& s,
              bool elementwise, bool s_is_weight, const std::string& what) {
  const Dims d = dims_of(ctx.g.type(n.output));
  const std::string shape =
      fmt::format("{{{}, {}, {}, {}, {}}}", d.c, d.h * d.w, snippet::nhwc_flag(ctx, n.output),
                  flag(!s_is_weight), flag(elementwise));
  constant(ctx, "MulCall", "kMul_" + ctx.ids[i],
           {shape, std::to_string(ctx.g.type(n.output).sample_numel()), ctx.tensor(n.inputs[0]), s,
            ctx.tensor(n.output), flag(s_is_weight)});
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
  ctx.s.pack.line("ZOC_TRY(zoc::pack_tensor(source, \"{}\", {{{}, 1, 1}}, {}, kDType, staging + kW_{}));",
                  sanitize_comment(gamma->name), gamma->shape[0], init_rule_cpp(init.rule),
                  ctx.ids[i]);
  mul_call(ctx, n, i, "kW_" + ctx.ids[i], false, true, "layer scale (x * gamma per channel)");
  return true;
}

bool emit_layernorm(EmitContext& ctx, const ir::Node& n, size_t i) {
  const std::string& id = ctx.ids[i];
  const Dims d = dims_of(ctx.g.type(n.output));
  const ir::ParamSpec* w = param(n, ir::ParamRole::kNormWeight);
  const ir::ParamSpec* b = param(n, ir::ParamRole::kNormBias);
  ctx.s.pack.line("ZOC_TRY(zoc::pack_layernorm(source, \"{}\", \"{}\", {}, staging + kW_{}));",
                  sanitize_comment(w->name), sanitize_comment(b->name), d.c, id);
  constant(ctx, "LayerNormCall", "kLn_" + id,
           {std::to_string(d.c), std::to_string(d.h * d.w), "kW_" + id,
            fmt::format("{:.9g}f", n.attrs.f("eps")), ctx.tensor(n.inputs[0]),
            ctx.tensor(n.output)});
  comment(ctx, n, fmt::format("layer norm over {} channels at each pixel", d.c));
  timed_call(ctx, n, "v.layernorm(kLn_{}, {})", id, ctx.name_literal(n));
  return true;
}

bool emit_channel_shuffle(EmitContext& ctx, const ir::Node& n, size_t i) {
  const Dims d = dims_of(ctx.g.type(n.output));
  const int64_t groups = n.attrs.i("groups");
  constant(ctx, "ShuffleCall", "kShuffle_" + ctx.ids[i],
           {std::to_string(d.c), std::to_string(d.h * d.w), std::to_string(groups),
            ctx.tensor(n.inputs[0]), ctx.tensor(n.output)});
  comment(ctx, n, fmt::format("channel shuffle of {} channels in {} groups", d.c, groups));
  timed_call(ctx, n, "v.shuffle(kShuffle_{}, {})", ctx.ids[i], ctx.name_literal(n));
  return true;
}

bool emit_adaptive_pool(EmitContext& ctx, const ir::Node& n, size_t i) {
  const Dims in = dims_of(ctx.g.type(n.inputs[0])), out = dims_of(ctx.g.type(n.output));
  const std::string geometry = fmt::format("{{{}, {}, {}, {}, {}, {}}}", in.c, in.h, in.w, out.h,
                                           out.w, snippet::nhwc_flag(ctx, n.inputs[0]));
  constant(ctx, "AdaptivePoolCall", "kPool_" + ctx.ids[i],
           {geometry, ctx.tensor(n.inputs[0]), ctx.tensor(n.output)});
  comment(ctx, n, n.op == ir::OpKind::GlobalAvgPool
                      ? fmt::format("global average pool {}x{} (zoc's kernel)", in.h, in.w)
                      : fmt::format("adaptive average pool {}x{} -> {}x{}", in.h, in.w, out.h,
                                    out.w));
  timed_call(ctx, n, "v.adaptive_pool(kPool_{}, {})", ctx.ids[i], ctx.name_literal(n));
  return true;
}

}  // namespace

bool emit_zoo_layer(EmitContext& ctx, const ir::Node& n, size_t i) {
  switch (n.op) {
    case ir::OpKind::Mul: return emit_mul(ctx, n, i);
    case ir::OpKind::LayerScale: return emit_layer_scale(ctx, n, i);
    case ir::OpKind::LayerNorm: return emit_layernorm(ctx, n, i);
    case ir::OpKind::ChannelShuffle: return emit_channel_shuffle(ctx, n, i);
    case ir::OpKind::AdaptiveAvgPool2d:
    case ir::OpKind::GlobalAvgPool:  // an adaptive pool to 1x1 where the lowering chose it
      return emit_adaptive_pool(ctx, n, i);
    default: break;
  }
  ctx.diags.error(n.loc, fmt::format("layer '{}' ({}): not one of the zoo's layers", n.name,
                                     ir::op_info(n.op).name));
  return false;
}

// Channels [start, start + count) as one strided copy: per pixel (NHWC) or per sample (NCHW).
bool emit_slice_channels(EmitContext& ctx, const ir::Node& n, size_t i) {
  const Dims in = dims_of(ctx.g.type(n.inputs[0]));
  const int64_t start = n.attrs.i("start"), count = n.attrs.i("count");
  const auto [unit, rows] = snippet::copy_rows(ctx, n.inputs[0]);
  const int64_t src_pitch = ctx.stored_channels(n.inputs[0]) * unit;
  ctx.s.constants.line("constexpr zoc::CopyCall kSlice_{}[] = {{", ctx.ids[i]);
  ctx.s.constants.line("    {{{}, {}, 0, {}, {}, {}, {}, {}}},", ctx.tensor(n.inputs[0]),
                       ctx.tensor(n.output), count * unit, src_pitch, count * unit, rows,
                       start * unit);
  ctx.s.constants.line("}};");
  comment(ctx, n, fmt::format("channels {}..{} of {}", start, start + count - 1, in.c));
  timed_call(ctx, n, "v.concat(kSlice_{}, {})", ctx.ids[i], ctx.name_literal(n));
  return true;
}

}  // namespace zoc::cudnn
