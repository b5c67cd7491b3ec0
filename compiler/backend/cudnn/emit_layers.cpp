// One snippet per runtime layer: what each layer contributes to the generated model. A layer is
// a constant (its shapes, the tensors it reads and writes, its packed weights:
// zoc/cudnn/model_calls.h), a descriptor bundle member if it needs one, its weight packing, and
// one call in the layer sequence (`v.conv(conv1_, kConv_conv1, "conv1")`) that every step of the
// runtime skeleton (zoc/cudnn/model.h: create, describe, bind, run, tune, destroy) walks. The
// graph is lowered (compiler/ir/lowering.h): each node's layer kind picks its snippet
// (emit_layer), and the snippet prints what the lowering decided, each constant by field name
// (named_init.h). The convolution-shaped layers are emit_conv_layers.cpp's; those of zoc's own
// kernels, emit_kernel_layers.cpp's.
#include <fmt/format.h>

#include "compiler/backend/cudnn/emit_snippet.h"
#include "compiler/backend/cudnn/named_init.h"
#include "compiler/ir/activation_params.h"
#include "compiler/support/sanitize.h"

namespace zoc::cudnn {

using snippet::comment;
using snippet::constant;
using snippet::Dims;
using snippet::dims_of;
using snippet::timed_call;

bool emit_activation(EmitContext& ctx, const ir::Node& n, size_t i, const std::string& kind,
                     const act::Params& p, ir::ValueId x, const std::string& what) {
  const std::string& id = ctx.ids[i];
  named::ActivationCall call;
  call.kind = kind;
  if (p.a != 0 || p.b != 0) call.params = activation_params_text(p);  // else {0, 0}
  call.per_sample = ctx.g.type(n.output).sample_numel();
  call.x = ctx.tensor(x), call.y = ctx.tensor(n.output);
  constant(ctx, "ActivationCall", "kAct_" + id, named::items(call));
  comment(ctx, n, what);
  timed_call(ctx, n, "v.activation(kAct_{}, {})", id, ctx.name_literal(n));
  return true;
}

namespace {

// An activation node: y = f(x) through the activation kernel.
bool emit_node_activation(EmitContext& ctx, const ir::Node& n, size_t i) {
  switch (n.op) {
#define ZOC_ACTIVATION(op, grad, math)                                       \
  case ir::OpKind::op:                                                       \
    return emit_activation(ctx, n, i, "zoc::act::Kind::k" #math,             \
                           ir::activation_params<act::math>(n), n.inputs[0], \
                           std::string(ir::op_info(ir::OpKind::op).name));
#include "compiler/ir/ops.def"
    default:
      break;
  }
  return false;
}

}  // namespace

named::PoolGeometry pool_kernel_geometry(const EmitContext& ctx, const ir::Node& n) {
  const Dims in = dims_of(ctx.g.type(n.inputs[0])), out = dims_of(ctx.g.type(n.output));
  const ir::Pair k = n.attrs.pair("kernel"), s = n.attrs.pair("stride"),
                 p = n.attrs.pair("padding");
  const bool is_max = n.op == ir::OpKind::MaxPool2d;
  const ir::Pair d = is_max ? n.attrs.pair("dilation") : ir::Pair{1, 1};
  named::PoolGeometry g;
  g.c = in.c, g.h = in.h, g.w = in.w, g.out_h = out.h, g.out_w = out.w, g.kh = k.h, g.kw = k.w;
  g.stride_h = s.h, g.stride_w = s.w, g.pad_h = p.h, g.pad_w = p.w, g.dil_h = d.h, g.dil_w = d.w;
  g.max = is_max;
  g.count_include_pad = !is_max && n.attrs.b("count_include_pad");
  g.nhwc = snippet::nhwc_flag(ctx, n.inputs[0]);
  return g;
}

// Pooling cuDNN cannot express (ceil_mode windows hanging over the padded input, dilated max
// pooling): zoc/kernels/layer_kernels.cuh's pooling kernel, with PyTorch's edge rules.
bool emit_pool_kernel(EmitContext& ctx, const ir::Node& n, size_t i) {
  const std::string& id = ctx.ids[i];
  const Dims in = dims_of(ctx.g.type(n.inputs[0])), out = dims_of(ctx.g.type(n.output));
  const ir::Pair k = n.attrs.pair("kernel"), s = n.attrs.pair("stride"),
                 p = n.attrs.pair("padding");
  const bool is_max = n.op == ir::OpKind::MaxPool2d;
  const ir::Pair d = is_max ? n.attrs.pair("dilation") : ir::Pair{1, 1};
  named::PoolKernelCall call;
  call.g = pool_kernel_geometry(ctx, n), call.x = ctx.tensor(n.inputs[0]);
  call.y = ctx.tensor(n.output);
  constant(ctx, "PoolKernelCall", "kPool_" + id, named::items(call));
  comment(ctx, n,
          fmt::format("{} pool {}x{}/{} pad {}{}{}, {}x{} -> {}x{} (zoc's kernel)",
                      is_max ? "max" : "average", k.h, k.w, s.h, p.h,
                      n.attrs.b("ceil_mode") ? ", ceil_mode" : "",
                      d != ir::Pair{1, 1} ? fmt::format(", dilation {}", d.h) : "", in.h, in.w,
                      out.h, out.w));
  timed_call(ctx, n, "v.pool_kernel(kPool_{}, {})", id, ctx.name_literal(n));
  return true;
}

namespace {

// cuDNN's pooling; global average pooling is a window over the whole image.
bool emit_pool(EmitContext& ctx, const ir::Node& n, size_t i) {
  const std::string& id = ctx.ids[i];
  const Dims in = dims_of(ctx.g.type(n.inputs[0]));
  const Dims out = dims_of(ctx.g.type(n.output));
  ir::Pair k{in.h, in.w}, s{in.h, in.w}, p{0, 0};
  std::string mode = "CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING";
  std::string what = fmt::format("global average pool {}x{}", in.h, in.w);
  if (n.op != ir::OpKind::GlobalAvgPool) {
    k = n.attrs.pair("kernel"), s = n.attrs.pair("stride"), p = n.attrs.pair("padding");
    const bool is_max = n.op == ir::OpKind::MaxPool2d;
    mode = is_max                           ? "CUDNN_POOLING_MAX"
           : n.attrs.b("count_include_pad") ? "CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING"
                                            : "CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING";
    what = fmt::format("{} pool {}x{}/{} pad {}, {}x{} -> {}x{}", is_max ? "max" : "average", k.h,
                       k.w, s.h, p.h, in.h, in.w, out.h, out.w);
  }
  pool_constant(ctx, n, i, mode, {k, s, p}, ctx.title(n));
  comment(ctx, n, what);
  timed_call(ctx, n, "v.pool({}_, kPool_{}, {})", id, id, ctx.name_literal(n));
  return true;
}

bool emit_softmax(EmitContext& ctx, const ir::Node& n, size_t i) {
  const std::string& id = ctx.ids[i];
  const Dims d = dims_of(ctx.g.type(n.output));
  named::SoftmaxCall call;
  call.features = d.c, call.x = ctx.tensor(n.inputs[0]), call.y = ctx.tensor(n.output);
  constant(ctx, "SoftmaxCall", "kSoftmax_" + id, named::items(call));
  snippet::member(ctx, "TensorLayer", id, ctx.title(n));
  comment(ctx, n, fmt::format("softmax over {} features", d.c));
  timed_call(ctx, n, "v.softmax({}_, kSoftmax_{}, {})", id, id, ctx.name_literal(n));
  return true;
}

bool emit_batchnorm(EmitContext& ctx, const ir::Node& n, size_t i) {
  const std::string& id = ctx.ids[i];
  const Dims d = dims_of(ctx.g.type(n.output));
  named::BatchNormCall call;
  call.c = d.c, call.h = d.h, call.w = d.w, call.params = "kW_" + id;
  call.eps = fmt::format("{:.9g}", n.attrs.f("eps"));
  call.x = ctx.tensor(n.inputs[0]), call.y = ctx.tensor(n.output);
  constant(ctx, "BatchNormCall", "kBn_" + id, named::items(call));
  snippet::member(ctx, "BatchNormLayer", id, ctx.title(n));
  ctx.s.pack.line("ZOC_TRY(zoc::pack_batchnorm(source, \"{}\", {}, staging + kW_{}));",
                  sanitize_comment(n.name), d.c, id);
  comment(ctx, n, "batch norm (not folded: no conv before it)");
  timed_call(ctx, n, "v.batchnorm({}_, kBn_{}, {})", id, id, ctx.name_literal(n));
  return true;
}

bool emit_input(EmitContext& ctx, const ir::Node& n, size_t i) {
  const Dims d = dims_of(ctx.g.type(n.output));
  const int64_t stored = ctx.stored_channels(n.output);
  const std::string name = "kIn_" + ctx.ids[i];
  const ir::LayerKind kind = n.lowered->kind;
  if (kind == ir::LayerKind::InputConvert) {
    comment(ctx, n,
            stored == d.c
                ? std::string("fp32 NCHW from the caller -> NHWC in the model's precision")
                : fmt::format("fp32 NCHW from the caller -> NHWC in the model's "
                              "precision, {} channels zero-padded to {}",
                              d.c, stored));
  } else if (kind == ir::LayerKind::InputCopy) {
    comment(ctx, n, "fp32 NCHW from the caller, copied into the arena (plans bind fixed pointers)");
  } else {
    comment(ctx, n, "read in place from the caller's fp32 NCHW buffer");
    return true;
  }
  named::InputCall call;
  call.c = d.c, call.h = d.h, call.w = d.w, call.c_stored = stored, call.y = ctx.tensor(n.output);
  constant(ctx, "InputCall", name, named::items(call));
  timed_call(ctx, n, "v.{}({})",
             kind == ir::LayerKind::InputConvert ? "input_to_nhwc" : "input_copy", name);
  return true;
}

// The snippet of the runtime layer the lowering chose.
bool emit_by_kind(EmitContext& ctx, const ir::Node& n, size_t i) {
  switch (n.lowered->kind) {
    case ir::LayerKind::InputInPlace:
    case ir::LayerKind::InputCopy:
    case ir::LayerKind::InputConvert:
      return emit_input(ctx, n, i);
    case ir::LayerKind::ConvLegacy:
    case ir::LayerKind::ConvGraph:
    case ir::LayerKind::ConvDepthwise:
      return emit_conv(ctx, n, i);
    case ir::LayerKind::ConvTranspose:
      return emit_conv_transpose(ctx, n, i);
    case ir::LayerKind::LinearGemm:
    case ir::LayerKind::LinearConv:
      return emit_linear(ctx, n, i);
    case ir::LayerKind::Pool:
      return emit_pool(ctx, n, i);
    case ir::LayerKind::PoolKernel:
      return emit_pool_kernel(ctx, n, i);
    case ir::LayerKind::Softmax:
      return emit_softmax(ctx, n, i);
    case ir::LayerKind::BatchNorm:
      return emit_batchnorm(ctx, n, i);
    case ir::LayerKind::Add:
      return emit_add(ctx, n, i);
    case ir::LayerKind::Copy:
      return n.op == ir::OpKind::Concat ? emit_concat(ctx, n, i) : emit_slice_channels(ctx, n, i);
    case ir::LayerKind::View:
      return emit_view(ctx, n);
    case ir::LayerKind::Activation:
      return emit_node_activation(ctx, n, i);
    case ir::LayerKind::ConstOp:
      return emit_const_op(ctx, n, i);
    case ir::LayerKind::Binary:
      return emit_binary(ctx, n, i);
    case ir::LayerKind::AdaptivePool:
    case ir::LayerKind::PadKernel:
    case ir::LayerKind::ChannelConv:
    case ir::LayerKind::Relayout:
    case ir::LayerKind::Mul:
    case ir::LayerKind::LayerNorm:
    case ir::LayerKind::Shuffle:
    case ir::LayerKind::Upsample:
    case ir::LayerKind::UpsampleOutput:
    case ir::LayerKind::ArgmaxOutput:
    case ir::LayerKind::ChannelSoftmax:
      return emit_kernel_layer(ctx, n, i);
    case ir::LayerKind::None:
      break;
  }
  ctx.diags.error(n.loc, fmt::format("layer '{}' ({}): not lowered (run lower-to-target)",
                                     shown_text(n.name), ir::op_info(n.op).name));
  return false;
}

}  // namespace

void pool_constant(EmitContext& ctx, const ir::Node& n, size_t i, const std::string& mode,
                   const PoolWindow& win, const std::string& title) {
  const std::string& id = ctx.ids[i];
  const Dims in = dims_of(ctx.g.type(n.inputs[0])), out = dims_of(ctx.g.type(n.output));
  named::PoolShape shape;
  shape.mode = mode, shape.c = in.c, shape.h = in.h, shape.w = in.w;
  shape.kh = win.kernel.h, shape.kw = win.kernel.w, shape.pad_h = win.padding.h;
  shape.pad_w = win.padding.w, shape.stride_h = win.stride.h, shape.stride_w = win.stride.w;
  shape.out_h = out.h, shape.out_w = out.w;
  named::PoolCall call;
  call.shape = shape, call.x = ctx.tensor(n.inputs[0]), call.y = ctx.tensor(n.output);
  constant(ctx, "PoolCall", "kPool_" + id, named::items(call));
  snippet::member(ctx, "PoolLayer", id, title);
}

bool emit_concat(EmitContext& ctx, const ir::Node& n, size_t i) {
  const std::string& id = ctx.ids[i];
  const Dims out = dims_of(ctx.g.type(n.output));
  ctx.s.constants.line("constexpr zoc::CopyCall kCat_{}[] = {{", id);
  int64_t c_off = 0;
  for (ir::ValueId v : n.inputs) {
    const Dims d = dims_of(ctx.g.type(v));
    const auto [unit, rows] = snippet::copy_rows(ctx, v);
    named::CopyCall part;
    part.src = ctx.tensor(v), part.y = ctx.tensor(n.output);
    part.dst_offset = c_off * unit, part.dst_pitch = out.c * unit, part.src_pitch = d.c * unit;
    part.width = d.c * unit, part.rows = rows;
    ctx.s.constants.wrapped("    {", named::items(part), "},");
    c_off += d.c;
  }
  ctx.s.constants.line("}};");
  comment(ctx, n, fmt::format("concatenate {} inputs along channels", n.inputs.size()));
  timed_call(ctx, n, "v.concat(kCat_{}, {})", id, ctx.name_literal(n));
  return true;
}

bool emit_add(EmitContext& ctx, const ir::Node& n, size_t i) {
  const std::string& id = ctx.ids[i];
  named::AddCall call;
  call.a = ctx.tensor(n.inputs[0]), call.b = ctx.tensor(n.inputs[1]);
  call.y = ctx.tensor(n.output), call.per_sample = ctx.g.type(n.output).sample_numel();
  constant(ctx, "AddCall", "kAdd_" + id, named::items(call));
  comment(ctx, n, "elementwise add");
  timed_call(ctx, n, "v.add(kAdd_{}, {})", id, ctx.name_literal(n));
  return true;
}

bool emit_view(EmitContext& ctx, const ir::Node& n) {
  comment(ctx, n, "a view of its input (no data movement)");
  return true;
}

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
    ctx.s.layers.line("ZOC_TRY(v.join({}, {}));  // side branch {} done", k, ctx.name_literal(n),
                      k);
  }
  return emit_by_kind(ctx, n, i);
}

}  // namespace zoc::cudnn
