// One snippet per op: what each layer contributes to the generated class (descriptor members,
// their creation and per-batch description, weight packing, the forward call, destruction).
#include <fmt/format.h>

#include "compiler/backend/cudnn/emit_internal.h"
#include "compiler/support/sanitize.h"

namespace zoc::cudnn {
namespace {

struct Dims {
  int64_t c = 1, h = 1, w = 1;
};

Dims dims_of(const ir::TensorType& t) {
  if (t.dims.size() == 3) return {t.dims[0], t.dims[1], t.dims[2]};
  return {t.dims.empty() ? 1 : t.dims[0], 1, 1};
}

const ir::ParamSpec* param(const ir::Node& n, ir::ParamRole role) {
  for (const ir::ParamSpec& p : n.params) {
    if (p.role == role) return &p;
  }
  return nullptr;
}

std::string cstr(const ir::ParamSpec* p) {
  return p ? fmt::format("\"{}\"", sanitize_comment(p->name)) : "nullptr";
}

// "conv 3x3/2, 64->128, 56x56 -> 28x28"
std::string conv_summary(const EmitContext& ctx, const ir::Node& n) {
  const Dims in = dims_of(ctx.g.type(n.inputs[0]));
  const Dims out = dims_of(ctx.g.type(n.output));
  const ir::Pair k = n.attrs.pair("kernel"), s = n.attrs.pair("stride");
  std::string text = fmt::format("conv {}x{}/{}, {}->{}, {}x{} -> {}x{}", k.h, k.w, s.h, in.c,
                                 out.c, in.h, in.w, out.h, out.w);
  if (n.inputs.size() == 2) text += ", + residual";
  if (n.attrs.i("activation") == 1) text += ", relu";
  return text;
}

void comment(EmitContext& ctx, const ir::Node& n, const std::string& what) {
  std::string loc = n.loc.known() ? fmt::format("  ({})", sanitize_comment(n.loc.str())) : "";
  ctx.s.forward.line("// {}: {}{}", ctx.title(n), what, loc);
}

bool unsupported(EmitContext& ctx, const ir::Node& n, const std::string& what) {
  ctx.diags.error(n.loc, fmt::format("layer '{}' ({}): the cuDNN backend does not support {}",
                                     n.name, ir::op_info(n.op).name, what));
  return false;
}

// The node that waits for side branch k.
int join_of(const EmitContext& ctx, int k) {
  for (size_t j = 0; j < ctx.joins_at.size(); ++j) {
    for (int w : ctx.joins_at[j]) {
      if (w == k) return static_cast<int>(j);
    }
  }
  return -1;
}

// A convolution as the generated ConvLayer sees it: input as stored, filter, output.
struct ConvGeom {
  int64_t c = 0, h = 1, w = 1;  // input channels (as stored), height, width
  int64_t k = 0, r = 1, s = 1;  // output channels, filter height and width
  int64_t pad_h = 0, pad_w = 0, stride_h = 1, stride_w = 1, dil_h = 1, dil_w = 1, groups = 1;
  int64_t out_h = 1, out_w = 1;
  bool relu = false;
  bool residual = false;  // a second input added before the activation
};

// Everything of a fused convolution except its weight packing: the shape constant, the
// descriptors (created, described per batch, tuned, destroyed) and the forward call, on the
// side stream when the schedule put it there. `summary` is the forward comment.
void emit_conv_call(EmitContext& ctx, const ir::Node& n, size_t i, const ConvGeom& g,
                    const std::string& summary) {
  const std::string& id = ctx.ids[i];
  const int side = ctx.side_of[i];  // >= 0: runs on the side stream
  ctx.s.constants.line(
      "constexpr zoc::ConvShape kConv_{} = {{{}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, "
      "{}, {}, {}}};",
      id, g.c, g.h, g.w, g.k, g.r, g.s, g.pad_h, g.pad_w, g.stride_h, g.stride_w, g.dil_h,
      g.dil_w, g.groups, g.out_h, g.out_w, g.relu ? "true" : "false");
  const std::string z = g.residual ? ctx.ptr(n.inputs[1]) : "nullptr";
  const bool graph = ctx.graph_api && g.groups == 1;
  if (graph) {
    ctx.s.members.line("zoc::GraphConvLayer {}_;  // {}", id, sanitize_comment(ctx.title(n)));
    ctx.s.create.line("ZOC_TRY({}_.create(kConv_{}, kTypes, {}, {}));", id, id,
                      g.residual ? "true" : "false", ctx.name_literal(n));
  } else {
    ctx.s.members.line("zoc::ConvLayer {}_;  // {}", id, sanitize_comment(ctx.title(n)));
    ctx.s.create.line("ZOC_TRY({}_.create(kConv_{}, kTypes, {}));", id, id, ctx.name_literal(n));
  }
  if (side >= 0) {  // its own workspace: it may run while the main branch uses the other
    // (a graph-API plan is built on the handle that runs it)
    ctx.s.describe.line("ZOC_TRY({}_.describe({}, n, side_limit_, {}, &plan_));", id,
                        graph ? "cudnn_side_" : "cudnn_", ctx.name_literal(n));
  } else {
    ctx.s.describe.line("ZOC_TRY({}_.describe(cudnn_, n, workspace_limit, {}, &plan_));", id,
                        ctx.name_literal(n));
  }
  // Both APIs time their candidates on the real call (the graph API its engine configs).
  ctx.s.tune.line("ZOC_TRY({}_.tune(cudnn_, n, {}, w + kW_{}, w + kB_{}, {}, {}, scratch->get(), "
                  "scratch_bytes, stream, {}, &choice));",
                  id, ctx.ptr(n.inputs[0]), id, id, z, ctx.ptr(n.output), ctx.name_literal(n));
  ctx.s.tune.line("plan->set(choice);");
  if (side >= 0) {
    ctx.s.describe.line("side_need_ = std::max(side_need_, {}_.workspace);", id);
  } else {
    ctx.s.describe.line("need = std::max(need, {}_.workspace);", id);
  }
  ctx.s.destroy.line("{}_.destroy();", id);

  comment(ctx, n, summary);
  if (side >= 0) {
    ctx.s.forward.line("// ... on the side stream, beside the main branch until layer {} joins it",
                       sanitize_comment(ctx.g.nodes[static_cast<size_t>(join_of(ctx, side))].name));
    ctx.s.forward.line("ZOC_CUDA(cudaEventRecord(fork_[{}], stream), {});", side, ctx.name_literal(n));
    ctx.s.forward.line("ZOC_CUDA(cudaStreamWaitEvent(side_, fork_[{}], 0), {});", side,
                       ctx.name_literal(n));
  }
  if (graph) {
    ctx.s.bind.line("ZOC_TRY({}_.bind({}, w + kW_{}, w + kB_{}, {}, {}, {}, {}));", id,
                    ctx.ptr(n.inputs[0]), id, id, z, ctx.ptr(n.output),
                    side >= 0 ? "side_workspace_" : "workspace_", ctx.name_literal(n));
    ctx.s.forward.line("ZOC_TRY({}_.run({}, {}));  // x {}, y {}{}", id,
                       side >= 0 ? "cudnn_side_" : "cudnn_", ctx.name_literal(n),
                       ctx.ptr(n.inputs[0]), ctx.ptr(n.output), g.residual ? ", z " + z : "");
  } else {
    ctx.s.forward.line(
        "ZOC_CUDNN(cudnnConvolutionBiasActivationForward({handle}, &kOne, {id}_.x, {in}, {id}_.w, "
        "w + kW_{id}, {id}_.conv, {id}_.algo, {ws}, {id}_.workspace, {alpha2}, {id}_.y, {z}, "
        "{id}_.bias, w + kB_{id}, {id}_.act, {id}_.y, {out}),",
        fmt::arg("handle", side >= 0 ? "cudnn_side_" : "cudnn_"),
        fmt::arg("ws", side >= 0 ? "side_workspace_" : "workspace_"),
        fmt::arg("id", id), fmt::arg("in", ctx.ptr(n.inputs[0])),
        fmt::arg("alpha2", g.residual ? "&kOne" : "&kZero"),
        fmt::arg("z", g.residual ? z : ctx.ptr(n.output)),
        fmt::arg("out", ctx.ptr(n.output)));
    ctx.s.forward.line("          {});", ctx.name_literal(n));
  }
  if (side >= 0) {
    ctx.s.forward.line("ZOC_CUDA(cudaEventRecord(join_[{}], side_), {});", side, ctx.name_literal(n));
  }
}

bool emit_conv(EmitContext& ctx, const ir::Node& n, size_t i) {
  const std::string& id = ctx.ids[i];
  const Dims in = dims_of(ctx.g.type(n.inputs[0]));
  const Dims out = dims_of(ctx.g.type(n.output));
  const ir::Pair k = n.attrs.pair("kernel"), s = n.attrs.pair("stride"),
                 p = n.attrs.pair("padding"), d = n.attrs.pair("dilation");
  const int64_t groups = n.attrs.i("groups");
  const ConvGeom g{.c = ctx.stored_channels(n.inputs[0]), .h = in.h, .w = in.w,
                   .k = out.c, .r = k.h, .s = k.w,
                   .pad_h = p.h, .pad_w = p.w, .stride_h = s.h, .stride_w = s.w,
                   .dil_h = d.h, .dil_w = d.w, .groups = groups,
                   .out_h = out.h, .out_w = out.w,
                   .relu = n.attrs.i("activation") == 1, .residual = n.inputs.size() == 2};

  const ir::ParamSpec* bn_w = param(n, ir::ParamRole::kBnWeight);
  std::string bn = "nullptr";
  if (bn_w) bn = fmt::format("\"{}\"", sanitize_comment(bn_w->name.substr(0, bn_w->name.size() - 7)));
  const double eps = n.attrs.has("bn_eps") ? n.attrs.f("bn_eps") : 0.0;
  ctx.s.pack.line("// {}", sanitize_comment(ctx.title(n)));
  ctx.s.pack.line(
      "ZOC_TRY(zoc::pack_conv(source, {{{}, {}, {}, {:.9g}, {}, {}, {}, {}, {}, {}, kDType}}, "
      "staging + kW_{}, staging + kB_{}));",
      cstr(param(n, ir::ParamRole::kWeight)), cstr(param(n, ir::ParamRole::kBias)), bn, eps,
      out.c, in.c / groups, k.h, k.w, ctx.t.nhwc ? "true" : "false",
      ctx.stored_channels(n.inputs[0]) / groups, id, id);
  emit_conv_call(ctx, n, i, g, conv_summary(ctx, n));
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
    if (n.attrs.b("ceil_mode")) return unsupported(ctx, n, "ceil_mode: true");
    if (n.op == ir::OpKind::MaxPool2d && n.attrs.pair("dilation") != ir::Pair{1, 1}) {
      return unsupported(ctx, n, "dilated pooling");
    }
    kh = k.h, kw = k.w, sh = s.h, sw = s.w, ph = p.h, pw = p.w;
    const bool is_max = n.op == ir::OpKind::MaxPool2d;
    mode = is_max ? "CUDNN_POOLING_MAX"
                  : (n.attrs.b("count_include_pad") ? "CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING"
                                                    : "CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING");
    what = fmt::format("{} pool {}x{}/{} pad {}, {}x{} -> {}x{}", is_max ? "max" : "average", kh,
                       kw, sh, ph, in.h, in.w, out.h, out.w);
  }
  ctx.s.constants.line(
      "constexpr zoc::PoolShape kPool_{} = {{{}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}}};", id,
      mode, in.c, in.h, in.w, kh, kw, ph, pw, sh, sw, out.h, out.w);
  ctx.s.members.line("zoc::PoolLayer {}_;  // {}", id, sanitize_comment(ctx.title(n)));
  ctx.s.create.line("ZOC_TRY({}_.create(kPool_{}, kTypes, {}));", id, id, ctx.name_literal(n));
  ctx.s.describe.line("ZOC_TRY({}_.describe(n, {}));", id, ctx.name_literal(n));
  ctx.s.destroy.line("{}_.destroy();", id);
  comment(ctx, n, what);
  ctx.s.forward.line(
      "ZOC_CUDNN(cudnnPoolingForward(cudnn_, {id}_.pool, &kOne, {id}_.x, {in}, &kZero, {id}_.y, "
      "{out}), {nm});",
      fmt::arg("id", id), fmt::arg("in", ctx.ptr(n.inputs[0])), fmt::arg("out", ctx.ptr(n.output)),
      fmt::arg("nm", ctx.name_literal(n)));
  return true;
}

bool emit_activation(EmitContext& ctx, const ir::Node& n, size_t i) {
  const std::string& id = ctx.ids[i];
  const Dims d = dims_of(ctx.g.type(n.output));
  const char* mode = n.op == ir::OpKind::Relu   ? "CUDNN_ACTIVATION_RELU"
                     : n.op == ir::OpKind::Tanh ? "CUDNN_ACTIVATION_TANH"
                                                : "CUDNN_ACTIVATION_SIGMOID";
  ctx.s.members.line("zoc::ActivationLayer {}_;  // {}", id, sanitize_comment(ctx.title(n)));
  ctx.s.create.line("ZOC_TRY({}_.create({}, {}, {}, {}, kTypes, {}));", id, mode, d.c, d.h,
                    d.w, ctx.name_literal(n));
  ctx.s.describe.line("ZOC_TRY({}_.describe(n, {}));", id, ctx.name_literal(n));
  ctx.s.destroy.line("{}_.destroy();", id);
  comment(ctx, n, ir::op_info(n.op).name.data());
  ctx.s.forward.line(
      "ZOC_CUDNN(cudnnActivationForward(cudnn_, {id}_.act, &kOne, {id}_.tensor.t, {in}, &kZero, "
      "{id}_.tensor.t, {out}), {nm});",
      fmt::arg("id", id), fmt::arg("in", ctx.ptr(n.inputs[0])), fmt::arg("out", ctx.ptr(n.output)),
      fmt::arg("nm", ctx.name_literal(n)));
  return true;
}

bool emit_softmax(EmitContext& ctx, const ir::Node& n, size_t i) {
  const std::string& id = ctx.ids[i];
  const Dims d = dims_of(ctx.g.type(n.output));
  ctx.s.members.line("zoc::TensorLayer {}_;  // {}", id, sanitize_comment(ctx.title(n)));
  ctx.s.create.line("ZOC_TRY({}_.create({}, 1, 1, kTypes, {}));", id, d.c,
                    ctx.name_literal(n));
  ctx.s.describe.line("ZOC_TRY({}_.describe(n, {}));", id, ctx.name_literal(n));
  ctx.s.destroy.line("{}_.destroy();", id);
  comment(ctx, n, fmt::format("softmax over {} features", d.c));
  ctx.s.forward.line(
      "ZOC_CUDNN(cudnnSoftmaxForward(cudnn_, CUDNN_SOFTMAX_ACCURATE, CUDNN_SOFTMAX_MODE_INSTANCE, "
      "&kOne, {id}_.t, {in}, &kZero, {id}_.t, {out}), {nm});",
      fmt::arg("id", id), fmt::arg("in", ctx.ptr(n.inputs[0])), fmt::arg("out", ctx.ptr(n.output)),
      fmt::arg("nm", ctx.name_literal(n)));
  return true;
}

bool emit_batchnorm(EmitContext& ctx, const ir::Node& n, size_t i) {
  const std::string& id = ctx.ids[i];
  const Dims d = dims_of(ctx.g.type(n.output));
  ctx.s.members.line("zoc::BatchNormLayer {}_;  // {}", id, sanitize_comment(ctx.title(n)));
  ctx.s.create.line("ZOC_TRY({}_.create({}, {}, {}, kTypes, {}));", id, d.c, d.h, d.w,
                    ctx.name_literal(n));
  ctx.s.describe.line("ZOC_TRY({}_.describe(n, {}));", id, ctx.name_literal(n));
  ctx.s.destroy.line("{}_.destroy();", id);
  ctx.s.pack.line("ZOC_TRY(zoc::pack_batchnorm(source, \"{}\", {}, staging + kW_{}));",
                  sanitize_comment(n.name), d.c, id);
  comment(ctx, n, "batch norm (not folded: no conv before it)");
  ctx.s.forward.line(
      "ZOC_CUDNN(cudnnBatchNormalizationForwardInference(cudnn_, CUDNN_BATCHNORM_SPATIAL, &kOne, "
      "&kZero, {id}_.tensor.t, {in}, {id}_.tensor.t, {out}, {id}_.params, w + kW_{id}, "
      "w + kW_{id} + {c4}, w + kW_{id} + {c8}, w + kW_{id} + {c12}, {eps:.9g}), {nm});",
      fmt::arg("id", id), fmt::arg("in", ctx.ptr(n.inputs[0])), fmt::arg("out", ctx.ptr(n.output)),
      fmt::arg("c4", 4 * d.c), fmt::arg("c8", 8 * d.c), fmt::arg("c12", 12 * d.c),
      fmt::arg("eps", n.attrs.f("eps")), fmt::arg("nm", ctx.name_literal(n)));
  return true;
}

bool emit_add(EmitContext& ctx, const ir::Node& n) {
  comment(ctx, n, "elementwise add");
  ctx.s.forward.line("ZOC_CUDA(kernels::add({}, {}, {}, int64_t(n) * {}, stream), {});",
                     ctx.ptr(n.inputs[0]), ctx.ptr(n.inputs[1]), ctx.ptr(n.output),
                     ctx.g.type(n.output).sample_numel(), ctx.name_literal(n));
  return true;
}

bool emit_linear(EmitContext& ctx, const ir::Node& n, size_t i) {
  const std::string& id = ctx.ids[i];
  const int64_t in = ctx.g.type(n.inputs[0]).dims[0];
  const int64_t out = ctx.g.type(n.output).dims[0];
  // Features flattened from an NHWC image are in (h, w, c) order on the device; the weight's
  // columns are permuted at load time instead of transposing activations at run time.
  Dims hwc{0, 0, 0};
  const ir::Node& src = ctx.g.producer(n.inputs[0]);
  if (ctx.t.nhwc && src.op == ir::OpKind::Flatten) {
    const Dims d = dims_of(ctx.g.type(src.inputs[0]));
    if (d.h * d.w > 1) hwc = d;
  }
  const ir::ParamSpec* bias = param(n, ir::ParamRole::kBias);
  ctx.s.pack.line("// {}", sanitize_comment(ctx.title(n)));
  ctx.s.pack.line(
      "ZOC_TRY(zoc::pack_linear(source, {{{}, {}, {}, {}, {}, {}, {}, kDType}}, staging + "
      "kW_{}, {}));",
      cstr(param(n, ir::ParamRole::kWeight)), cstr(bias), out, in, hwc.c, hwc.h, hwc.w, id,
      bias || ctx.linear_as_conv ? fmt::format("staging + kB_{}", id) : "nullptr");
  if (ctx.linear_as_conv) {
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
  comment(ctx, n, fmt::format("linear {} -> {}{}", in, out,
                              hwc.c ? " (columns permuted to the NHWC flatten order)" : ""));
  if (bias) {
    ctx.s.forward.line("ZOC_CUDA(kernels::bias_rows({}, w + kB_{}, n, {}, stream), {});",
                       ctx.ptr(n.output), id, out, ctx.name_literal(n));
  }
  // Row-major y[n, out] = x[n, in] W^T is column-major y^T = W^T^T x^T: op(A) = W (lda = in).
  ctx.s.forward.line(
      "ZOC_CUBLAS(cublasGemmEx(cublas_, CUBLAS_OP_T, CUBLAS_OP_N, {out}, n, {in}, &kOne, "
      "w + kW_{id}, kBlasType, {in}, {x}, kBlasType, {in}, {beta}, {y}, kBlasType, {out}, "
      "kBlasCompute, CUBLAS_GEMM_DEFAULT), {nm});",
      fmt::arg("out", out), fmt::arg("in", in), fmt::arg("id", id),
      fmt::arg("x", ctx.ptr(n.inputs[0])), fmt::arg("beta", bias ? "&kOne" : "&kZero"),
      fmt::arg("y", ctx.ptr(n.output)), fmt::arg("nm", ctx.name_literal(n)));
  return true;
}

bool emit_concat(EmitContext& ctx, const ir::Node& n) {
  const Dims out = dims_of(ctx.g.type(n.output));
  const int64_t e = ctx.t.element_bytes;
  comment(ctx, n, fmt::format("concatenate {} inputs along channels", n.inputs.size()));
  int64_t c_off = 0;
  for (ir::ValueId v : n.inputs) {
    const Dims d = dims_of(ctx.g.type(v));
    if (ctx.t.nhwc) {
      ctx.s.forward.line(
          "ZOC_CUDA(cudaMemcpy2DAsync({} + {}, {}, {}, {}, {}, size_t(n) * {}, "
          "cudaMemcpyDeviceToDevice, stream), {});",
          ctx.ptr(n.output), c_off * e, out.c * e, ctx.ptr(v), d.c * e, d.c * e, d.h * d.w,
          ctx.name_literal(n));
    } else {
      const int64_t plane = d.h * d.w * e;
      ctx.s.forward.line(
          "ZOC_CUDA(cudaMemcpy2DAsync({} + {}, {}, {}, {}, {}, size_t(n), "
          "cudaMemcpyDeviceToDevice, stream), {});",
          ctx.ptr(n.output), c_off * plane, out.c * plane, ctx.ptr(v), d.c * plane, d.c * plane,
          ctx.name_literal(n));
    }
    c_off += d.c;
  }
  return true;
}

}  // namespace

void plan_weights(EmitContext& ctx) {
  const int64_t e = ctx.t.element_bytes;
  auto take = [&](int64_t bytes) {
    const int64_t at = ctx.weight_bytes;
    ctx.weight_bytes += (bytes + 255) / 256 * 256;
    return at;
  };
  ctx.weights.assign(ctx.g.nodes.size(), WeightSlot{});
  for (size_t i = 0; i < ctx.g.nodes.size(); ++i) {
    const ir::Node& n = ctx.g.nodes[i];
    WeightSlot& slot = ctx.weights[i];
    if (n.op == ir::OpKind::FusedConv2d) {
      const ir::ParamSpec* w = param(n, ir::ParamRole::kWeight);
      int64_t numel = 1;
      for (int64_t d : w->shape) numel *= d;
      numel = numel / w->shape[1] * (ctx.stored_channels(n.inputs[0]) / n.attrs.i("groups"));
      slot.weight = take(numel * e);
      slot.bias = take(w->shape[0] * e);  // always: folded BN or zeros
    } else if (n.op == ir::OpKind::Linear) {
      const ir::ParamSpec* w = param(n, ir::ParamRole::kWeight);
      slot.weight = take(w->shape[0] * w->shape[1] * e);
      // As a convolution it always has a bias (zeros when the layer has none).
      if (param(n, ir::ParamRole::kBias) || ctx.linear_as_conv) slot.bias = take(w->shape[0] * e);
    } else if (n.op == ir::OpKind::BatchNorm2d) {
      slot.weight = take(16 * ctx.g.type(n.output).dims[0]);
    }
  }
}

bool emit_layer(EmitContext& ctx, const ir::Node& n) {
  const size_t i = static_cast<size_t>(&n - ctx.g.nodes.data());
  if (ctx.weights[i].weight >= 0) {
    ctx.s.weight_offsets.line("inline constexpr size_t kW_{} = {};", ctx.ids[i], ctx.weights[i].weight);
  }
  if (ctx.weights[i].bias >= 0) {
    ctx.s.weight_offsets.line("inline constexpr size_t kB_{} = {};", ctx.ids[i], ctx.weights[i].bias);
  }
  switch (n.op) {
    case ir::OpKind::Input:
      if (ctx.t.nhwc) {
        const Dims d = dims_of(ctx.g.type(n.output));
        const int64_t stored = ctx.stored_channels(n.output);
        comment(ctx, n, stored == d.c ? std::string("fp32 NCHW from the caller -> NHWC in the model's precision")
                                      : fmt::format("fp32 NCHW from the caller -> NHWC in the model's "
                                                    "precision, {} channels zero-padded to {}",
                                                    d.c, stored));
        ctx.s.forward.line("ZOC_CUDA(kernels::input_to_nhwc(input, {}, n, {}, {}, {}, {}, stream), "
                           "\"input\");",
                           ctx.ptr(n.output), d.c, d.h, d.w, stored);
      } else if (ctx.plan.slots[n.output].offset >= 0) {
        const Dims d = dims_of(ctx.g.type(n.output));
        comment(ctx, n, "fp32 NCHW from the caller, copied into the arena (plans bind fixed pointers)");
        ctx.s.forward.line("ZOC_CUDA(cudaMemcpyAsync({}, input, size_t(n) * {} * sizeof(float), "
                           "cudaMemcpyDeviceToDevice, stream), \"input\");",
                           ctx.ptr(n.output), d.c * d.h * d.w);
      } else {
        comment(ctx, n, "read in place from the caller's fp32 NCHW buffer");
      }
      return true;
    case ir::OpKind::FusedConv2d: return emit_conv(ctx, n, i);
    case ir::OpKind::MaxPool2d:
    case ir::OpKind::AvgPool2d:
    case ir::OpKind::GlobalAvgPool: return emit_pool(ctx, n, i);
    case ir::OpKind::Relu:
    case ir::OpKind::Tanh:
    case ir::OpKind::Sigmoid: return emit_activation(ctx, n, i);
    case ir::OpKind::Softmax: return emit_softmax(ctx, n, i);
    case ir::OpKind::BatchNorm2d: return emit_batchnorm(ctx, n, i);
    case ir::OpKind::Add: return emit_add(ctx, n);
    case ir::OpKind::Linear: return emit_linear(ctx, n, i);
    case ir::OpKind::Concat: return emit_concat(ctx, n);
    case ir::OpKind::Flatten:
      comment(ctx, n, "a view of its input (no data movement)");
      return true;
    case ir::OpKind::Conv2d:
    case ir::OpKind::Dropout:
      return unsupported(ctx, n, "this op before the inference passes (run the pass pipeline)");
    default: break;  // training-graph ops and ops not built yet
  }
  return unsupported(ctx, n, "this op");
}

}  // namespace zoc::cudnn
