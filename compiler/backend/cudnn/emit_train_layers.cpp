// The trainer's per-op snippets: for each node of the training graph, a call constant
// (zoc/train_layers/calls.h), a descriptor bundle where the node needs one, and one call in its
// layer sequence (`v.conv_grad(conv1_, kConvGrad_d_pool1, "conv1")`), walked by the steps of
// zoc/train_layers/steps.h. A backward node is an op like any other: emit_train_layer's switch
// sends each node of the training graph to its snippet, here where its trainer form differs from
// inference (fp32 NCHW, parameters in PyTorch's layout; the layers zoc's own kernels run are in
// emit_train_kernel_layers.cpp); add, concat, flatten, reshape and the arithmetic with a scalar
// or of two tensors of one shape (const_op, binary) share inference's snippets. A backward node
// uses its forward layer's bundle (Node::origin names the layer).
#include <fmt/format.h>

#include "compiler/backend/cudnn/emit_snippet.h"
#include "compiler/backend/cudnn/named_init.h"
#include "compiler/backend/cudnn/train_emitter.h"
#include "compiler/ir/activation_params.h"
#include "compiler/lower/lower_to_target.h"
#include "compiler/support/sanitize.h"

namespace zoc::cudnn {

// cuDNN's grouped kernels took 48% of MobileNetV2's bf16 step (zoc/kernels/depthwise_grad.cuh).
bool trains_own_depthwise(const ir::Graph& g, const ir::Node& conv) {
  const ir::DType t = g.type(conv.output).dtype;
  if (!ir::is_depthwise_conv(g, conv) || (t != ir::DType::BF16 && t != ir::DType::F16)) {
    return false;
  }
  const ir::Pair k = conv.attrs.pair("kernel");
  return k.h == k.w && (k.h == 3 || k.h == 5 || k.h == 7) && !conv.attrs.b("bias");
}

bool any_own_depthwise(const ir::Graph& g) {
  for (const ir::Node& n : g.nodes) {
    if (trains_own_depthwise(g, n)) return true;
  }
  return false;
}

bool loss_scaled(const ir::Graph& g) {
  for (const ir::Value& v : g.values) {
    if (v.type && v.type->dtype == ir::DType::F16) return true;
  }
  return false;
}

namespace train_snippet {

using snippet::param;

std::string param_offset(const EmitContext& ctx, const ir::Node& n, ir::ParamRole role) {
  const ir::ParamSpec* p = param(n, role);
  if (!p) return "zoc::kNoTensor";
  return "kP_" + ctx.train->params[ctx.train->param_index.at(p->name)].id;
}

const ir::Node& forward_of(const EmitContext& ctx, const ir::Node& n) {
  return ctx.g.nodes[ctx.train->node_index.at(n.origin)];
}

std::string needed(const EmitContext& ctx, ir::ValueId v) {
  return ctx.train->readers[static_cast<size_t>(v)] > 0 ? ctx.tensor(v) : "zoc::kNoTensor";
}

// The gradient of the node's parameter of this role; kNoTensor where there is none (an absent,
// fixed or frozen parameter): the runtime's backward call skips it.
std::string grad_of(const EmitContext& ctx, const ir::Node& n, ir::ParamRole role) {
  const ir::ParamSpec* p = param(n, role);
  if (!p || !p->trainable || p->frozen) return "zoc::kNoTensor";
  for (ir::ValueId v : n.extra_outputs) {
    if (ctx.g.value_name(v) == "grad." + p->name) return ctx.tensor(v);
  }
  return "zoc::kNoTensor";
}

// A backward node's comment names its layer's frozen parameters, whose gradients it skips.
void call(EmitContext& ctx, const ir::Node& n, const std::string& what, const std::string& text) {
  std::string loc = n.loc.known() ? fmt::format("  ({})", sanitize_comment(n.loc.str())) : "";
  std::string frozen;
  if (!n.origin.empty()) {
    for (const ir::ParamSpec& p : n.params) {
      if (p.trainable && p.frozen) {
        frozen += (frozen.empty() ? "" : ", ") + sanitize_comment(p.name);
      }
    }
  }
  if (!frozen.empty()) loc = " (not for frozen " + frozen + ")" + loc;
  ctx.s.layers.comment(fmt::format("{}: {}{}", sanitize_comment(n.name), what, loc));
  ctx.s.layers.line("ZOC_TRY({});", text);
}

}  // namespace train_snippet

namespace {

using snippet::constant;
using snippet::Dims;
using snippet::dims_of;
using snippet::param;
using train_snippet::call;
using train_snippet::forward_of;
using train_snippet::grad_of;
using train_snippet::needed;
using train_snippet::param_offset;

bool emit_train_input(EmitContext& ctx, const ir::Node& n, size_t i) {
  const Dims d = dims_of(ctx.g.type(n.output));
  named::InputCall c;
  c.c = d.c, c.h = d.h, c.w = d.w, c.c_stored = d.c, c.y = ctx.tensor(n.output);
  constant(ctx, "InputCall", "kIn_" + ctx.ids[i], named::items(c));
  call(ctx, n,
       ctx.train->mixed()
           ? fmt::format("the caller's fp32 NCHW batch, stored NHWC in {} in the arena",
                         ctx.train->storage_name())
           : "the caller's fp32 NCHW batch, copied into the arena",
       fmt::format("v.input(kIn_{})", ctx.ids[i]));
  return true;
}

// A convolution, or a transposed one: the bundle of the convolution from `in` to `out` (for a
// transposed one, from its output back to its input: zoc/train_layers/layers.h).
bool emit_train_conv(EmitContext& ctx, const ir::Node& n, size_t i) {
  const std::string& id = ctx.ids[i];
  const bool transposed = n.op == ir::OpKind::ConvTranspose2d;
  if (const char* why = transposed ? lower::conv_transpose_refusal(n) : nullptr) {
    ctx.diags.error(n.loc, fmt::format("layer '{}' (conv_transpose2d): the cuDNN backend does "
                                       "not support {}",
                                       shown_text(n.name), why));
    return false;
  }
  const Dims x = dims_of(ctx.g.type(n.inputs[0])), y = dims_of(ctx.g.type(n.output));
  const Dims in = transposed ? y : x, out = transposed ? x : y;
  const ir::Pair k = n.attrs.pair("kernel"), s = n.attrs.pair("stride"),
                 p = n.attrs.pair("padding"), d = n.attrs.pair("dilation");
  named::ConvGeometry g;
  g.c = in.c, g.h = in.h, g.w = in.w, g.k = out.c, g.r = k.h, g.s = k.w, g.pad_h = p.h;
  g.pad_w = p.w, g.stride_h = s.h, g.stride_w = s.w, g.dil_h = d.h, g.dil_w = d.w;
  g.groups = n.attrs.i("groups"), g.out_h = out.h, g.out_w = out.w;
  named::ConvTrainCall c;
  c.g = g, c.x = ctx.tensor(n.inputs[0]), c.w = param_offset(ctx, n, ir::ParamRole::kWeight);
  c.b = param_offset(ctx, n, ir::ParamRole::kBias), c.y = ctx.tensor(n.output);
  constant(ctx, "train::ConvTrainCall", "kConv_" + id, named::items(c));
  snippet::member(ctx, "train::Conv", id, n.name);
  const bool own = trains_own_depthwise(ctx.g, n);
  const char* step = transposed ? "conv_transpose" : own ? "depthwise" : "conv";
  call(ctx, n,
       fmt::format("{} {}x{}/{}, {}->{}{}{}", transposed ? "conv_transpose" : "conv", k.h, k.w, s.h,
                   x.c, y.c, n.attrs.b("bias") ? " + bias" : "",
                   own ? ", depthwise (zoc's kernel)" : ""),
       fmt::format("v.{}({}_, kConv_{}, {})", step, id, id, ctx.name_literal(n)));
  return true;
}

bool emit_train_conv_grad(EmitContext& ctx, const ir::Node& n, size_t i) {
  const ir::Node& f = forward_of(ctx, n);
  const std::string name = "kConvGrad_" + ctx.ids[i];
  named::ConvGradCall c;
  c.x = ctx.tensor(n.inputs[0]), c.dy = ctx.tensor(n.inputs[1]);
  c.w = param_offset(ctx, f, ir::ParamRole::kWeight), c.dx = needed(ctx, n.output);
  c.dw = grad_of(ctx, n, ir::ParamRole::kWeight), c.db = grad_of(ctx, n, ir::ParamRole::kBias);
  constant(ctx, "train::ConvGradCall", name, named::items(c));
  const bool own = trains_own_depthwise(ctx.g, f);
  const bool transposed = n.op == ir::OpKind::ConvTranspose2dGrad;
  const char* step = transposed ? "conv_transpose_grad" : own ? "depthwise_grad" : "conv_grad";
  call(ctx, n,
       transposed ? "dx = conv(dy); dW, db"
       : own      ? "dx = conv^T(dy); dW (zoc's depthwise kernels)"
                  : "dx = conv^T(dy); dW, db",
       fmt::format("v.{}({}_, {}, {})", step, ctx.ids[ctx.train->node_index.at(f.name)], name,
                   ctx.name_literal(f)));
  return true;
}

bool emit_train_batchnorm(EmitContext& ctx, const ir::Node& n, size_t i) {
  const std::string& id = ctx.ids[i];
  const Dims d = dims_of(ctx.g.type(n.output));
  const bool training = n.attrs.has("training") && n.attrs.b("training");
  if (!training || n.extra_outputs.empty()) {
    ctx.diags.error(n.loc, fmt::format("layer '{}' (batchnorm2d): the trainer needs the training "
                                       "graph's batch norm (with its saved statistics)",
                                       shown_text(n.name)));
    return false;
  }
  named::BatchNormTrainCall c;
  c.c = d.c, c.h = d.h, c.w = d.w, c.eps = fmt::format("{:.9g}", n.attrs.f("eps"));
  c.momentum = fmt::format("{:.9g}", n.attrs.f("momentum"));
  c.x = ctx.tensor(n.inputs[0]), c.y = ctx.tensor(n.output);
  c.gamma = param_offset(ctx, n, ir::ParamRole::kBnWeight);
  c.beta = param_offset(ctx, n, ir::ParamRole::kBnBias);
  c.mean = param_offset(ctx, n, ir::ParamRole::kBnMean);
  c.var = param_offset(ctx, n, ir::ParamRole::kBnVar), c.saved = ctx.tensor(n.extra_outputs[0]);
  constant(ctx, "train::BatchNormTrainCall", "kBn_" + id, named::items(c));
  snippet::member(ctx, "BatchNormLayer", id, n.name);
  call(ctx, n,
       "batch norm: the batch's statistics in training (running averages updated), the running "
       "ones in evaluation",
       fmt::format("v.batchnorm({}_, kBn_{}, {})", id, id, ctx.name_literal(n)));
  return true;
}

bool emit_train_batchnorm_grad(EmitContext& ctx, const ir::Node& n, size_t i) {
  const ir::Node& f = forward_of(ctx, n);
  const std::string name = "kBnGrad_" + ctx.ids[i];
  named::BatchNormGradCall c;
  c.c = ctx.g.type(n.output).dims[0], c.eps = fmt::format("{:.9g}", f.attrs.f("eps"));
  c.x = ctx.tensor(n.inputs[0]), c.dy = ctx.tensor(n.inputs[1]);
  c.saved = ctx.tensor(n.inputs[2]), c.gamma = param_offset(ctx, f, ir::ParamRole::kBnWeight);
  c.dx = ctx.tensor(n.output), c.dgamma = grad_of(ctx, n, ir::ParamRole::kBnWeight);
  c.dbeta = grad_of(ctx, n, ir::ParamRole::kBnBias);
  constant(ctx, "train::BatchNormGradCall", name, named::items(c));
  call(ctx, n, "dx = BN'(dy); dgamma, dbeta",
       fmt::format("v.batchnorm_grad({}_, {}, {})", ctx.ids[ctx.train->node_index.at(f.name)], name,
                   ctx.name_literal(f)));
  return true;
}

bool emit_train_activation(EmitContext& ctx, const ir::Node& n, size_t i, const char* kind,
                           const act::Params& p) {
  named::ActivationTrainCall c;
  c.kind = kind;
  if (p.a != 0 || p.b != 0) c.params = activation_params_text(p);  // else {0, 0}
  c.per_sample = ctx.g.type(n.output).sample_numel();
  c.x = ctx.tensor(n.inputs[0]), c.y = ctx.tensor(n.output);
  std::string what(ir::op_info(n.op).name);
  if (auto add = ctx.train->add_into.find(i); add != ctx.train->add_into.end()) {
    const ir::Node& a = ctx.g.nodes[add->second];  // its sum, which nothing else reads
    c.x = ctx.tensor(a.inputs[0]), c.x2 = ctx.tensor(a.inputs[1]);
    what += fmt::format(" of the sum {} (its add done here)", sanitize_comment(a.name));
  }
  constant(ctx, "train::ActivationTrainCall", "kAct_" + ctx.ids[i], named::items(c));
  call(ctx, n, what, fmt::format("v.activation(kAct_{}, {})", ctx.ids[i], ctx.name_literal(n)));
  return true;
}

bool emit_train_activation_grad(EmitContext& ctx, const ir::Node& n, size_t i, const char* kind,
                                const act::Params& p) {
  const ir::Node& f = forward_of(ctx, n);
  named::ActivationGradCall c;
  c.kind = kind;
  if (p.a != 0 || p.b != 0) c.params = activation_params_text(p);  // else {0, 0}
  c.per_sample = ctx.g.type(n.output).sample_numel();
  c.s = ctx.tensor(n.inputs[0]), c.dy = ctx.tensor(n.inputs[1]), c.dx = ctx.tensor(n.output);
  std::string what = fmt::format("dx = {}'(dy)", ir::op_info(f.op).name);
  if (auto add = ctx.train->add_into.find(i); add != ctx.train->add_into.end()) {
    const ir::Node& a = ctx.g.nodes[add->second];  // dy is its sum, which nothing else reads
    c.dy = ctx.tensor(a.inputs[0]), c.dy2 = ctx.tensor(a.inputs[1]);
    what += fmt::format(", dy the sum {} (its add done here)", sanitize_comment(a.name));
  }
  constant(ctx, "train::ActivationGradCall", "kActGrad_" + ctx.ids[i], named::items(c));
  call(ctx, n, what,
       fmt::format("v.activation_grad(kActGrad_{}, {})", ctx.ids[i], ctx.name_literal(f)));
  return true;
}

bool emit_train_pool(EmitContext& ctx, const ir::Node& n, size_t i) {
  if (lower::pool_needs_kernel(n)) return emit_pool_kernel(ctx, n, i);  // inference's kernel
  const std::string& id = ctx.ids[i];
  const Dims in = dims_of(ctx.g.type(n.inputs[0]));
  ir::Pair k{in.h, in.w}, s{1, 1}, p{0, 0};
  std::string mode = "CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING";
  if (n.op != ir::OpKind::GlobalAvgPool) {
    // (ceil_mode and dilation were refused before the training graph: emit_trainer.cpp)
    k = n.attrs.pair("kernel"), s = n.attrs.pair("stride"), p = n.attrs.pair("padding");
  }
  if (n.op == ir::OpKind::MaxPool2d) {
    mode = "CUDNN_POOLING_MAX_DETERMINISTIC";
  } else if (n.op == ir::OpKind::AvgPool2d && !n.attrs.b("count_include_pad")) {
    mode = "CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING";
  }
  pool_constant(ctx, n, i, mode, {k, s, p}, n.name);
  call(ctx, n, fmt::format("{} {}x{}/{}", ir::op_info(n.op).name, k.h, k.w, s.h),
       fmt::format("v.pool({}_, kPool_{}, {})", id, id, ctx.name_literal(n)));
  return true;
}

// Max pooling reads the forward's input and output; average pooling reads neither, but cuDNN
// takes tensors of their shapes: dy stands in for the output.
bool emit_train_pool_grad(EmitContext& ctx, const ir::Node& n, size_t i) {
  const ir::Node& f = forward_of(ctx, n);
  if (lower::pool_needs_kernel(f)) {  // zoc's kernel: x and dy
    named::PoolKernelGradCall c;
    c.g = pool_kernel_geometry(ctx, f), c.x = ctx.tensor(n.inputs[0]);
    c.dy = ctx.tensor(n.inputs[n.op == ir::OpKind::MaxPool2dGrad ? 2 : 1]);
    c.dx = ctx.tensor(n.output);
    constant(ctx, "train::PoolKernelGradCall", "kPoolGrad_" + ctx.ids[i], named::items(c));
    call(ctx, n, fmt::format("dx = {}'(dy) (zoc's kernel)", ir::op_info(f.op).name),
         fmt::format("v.pool_kernel_grad(kPoolGrad_{}, {})", ctx.ids[i], ctx.name_literal(f)));
    return true;
  }
  const bool max = n.op == ir::OpKind::MaxPool2dGrad;
  const ir::ValueId dy = n.inputs[max ? 2 : 1];
  named::PoolGradCall c;
  c.x = ctx.tensor(n.inputs[0]), c.y = ctx.tensor(max ? n.inputs[1] : dy);
  c.dy = ctx.tensor(dy), c.dx = ctx.tensor(n.output);
  constant(ctx, "train::PoolGradCall", "kPoolGrad_" + ctx.ids[i], named::items(c));
  call(ctx, n, fmt::format("dx = {}'(dy)", ir::op_info(f.op).name),
       fmt::format("v.pool_grad({}_, kPoolGrad_{}, {})", ctx.ids[ctx.train->node_index.at(f.name)],
                   ctx.ids[i], ctx.name_literal(f)));
  return true;
}

bool emit_train_linear(EmitContext& ctx, const ir::Node& n, size_t i) {
  const int64_t in = ctx.g.type(n.inputs[0]).sample_numel(), out = ctx.g.type(n.output).dims[0];
  named::LinearTrainCall c;
  c.in = in, c.out = out, c.w = param_offset(ctx, n, ir::ParamRole::kWeight);
  c.b = param_offset(ctx, n, ir::ParamRole::kBias);
  c.x = ctx.tensor(n.inputs[0]), c.y = ctx.tensor(n.output);
  constant(ctx, "train::LinearTrainCall", "kFc_" + ctx.ids[i], named::items(c));
  call(ctx, n,
       fmt::format("linear {} -> {}: y = x W^T{}", in, out, n.attrs.b("bias") ? " + b" : ""),
       fmt::format("v.linear(kFc_{}, {})", ctx.ids[i], ctx.name_literal(n)));
  return true;
}

bool emit_train_linear_grad(EmitContext& ctx, const ir::Node& n, size_t i) {
  const ir::Node& f = forward_of(ctx, n);
  const int64_t in = ctx.g.type(n.inputs[0]).sample_numel(), out = ctx.g.type(n.inputs[1]).dims[0];
  named::LinearGradCall c;
  c.in = in, c.out = out, c.x = ctx.tensor(n.inputs[0]), c.dy = ctx.tensor(n.inputs[1]);
  c.w = param_offset(ctx, f, ir::ParamRole::kWeight), c.dx = needed(ctx, n.output);
  c.dw = grad_of(ctx, n, ir::ParamRole::kWeight), c.db = grad_of(ctx, n, ir::ParamRole::kBias);
  constant(ctx, "train::LinearGradCall", "kFcGrad_" + ctx.ids[i], named::items(c));
  call(ctx, n, "dx = dy W; dW = dy^T x; db = column sums of dy",
       fmt::format("v.linear_grad(kFcGrad_{}, {})", ctx.ids[i], ctx.name_literal(f)));
  return true;
}

// Masks from (seed, step, layer, element): `layer` is the forward dropout's node index, so its
// backward draws the same mask.
bool emit_train_dropout(EmitContext& ctx, const ir::Node& n, size_t i) {
  const bool backward = n.op == ir::OpKind::DropoutGrad;
  const ir::Node& f = backward ? forward_of(ctx, n) : n;
  const ir::ValueId x = n.inputs[0];
  named::DropoutCall c;
  c.p = snippet::float_literal(n.attrs.f("p")), c.layer = ctx.train->node_index.at(f.name);
  c.per_sample = ctx.g.type(n.output).sample_numel();
  c.x = ctx.tensor(x), c.y = ctx.tensor(n.output);
  constant(ctx, "train::DropoutCall", "kDrop_" + ctx.ids[i], named::items(c));
  call(ctx, n,
       backward ? "dx = dy * the step's mask"
                : fmt::format("p = {:.9g}, a mask drawn from (seed, step, layer, element); the "
                              "identity in evaluation",
                              n.attrs.f("p")),
       fmt::format("v.{}(kDrop_{}, {})", backward ? "dropout_grad" : "dropout", ctx.ids[i],
                   ctx.name_literal(f)));
  return true;
}

// One input's channels of a concatenation's gradient: a strided copy out of dy (NCHW: per
// sample, `count` channel planes starting at channel `start`).
bool emit_train_slice(EmitContext& ctx, const ir::Node& n, size_t i) {
  const Dims d = dims_of(ctx.g.type(n.inputs[0]));
  const int64_t plane = d.h * d.w * 4, start = n.attrs.i("start"), count = n.attrs.i("count");
  named::CopyCall part;
  part.src = ctx.tensor(n.inputs[0]), part.y = ctx.tensor(n.output), part.dst_offset = 0;
  part.dst_pitch = count * plane, part.src_pitch = d.c * plane, part.width = count * plane;
  part.rows = 1, part.src_offset = start * plane;
  ctx.s.constants.line("constexpr zoc::CopyCall kSlice_{}[] = {{", ctx.ids[i]);
  ctx.s.constants.wrapped("    {", named::items(part), "},");
  ctx.s.constants.line("}};");
  call(ctx, n, fmt::format("channels {}..{} of dy", start, start + count - 1),
       fmt::format("v.slice(kSlice_{}, {})", ctx.ids[i], ctx.name_literal(n)));
  return true;
}

bool emit_train_loss(EmitContext& ctx, const ir::Node& n) {
  named::LossCall c;
  c.classes = ctx.g.type(n.inputs[0]).dims[0], c.logits = ctx.tensor(n.inputs[0]);
  c.dlogits = ctx.tensor(n.output), c.loss = ctx.tensor(n.extra_outputs.at(0));
  constant(ctx, "train::LossCall", "kLossCall", named::items(c));
  call(ctx, n, "mean softmax cross-entropy of the logits, and its gradient", "v.loss(kLossCall)");
  return true;
}

// A softmax or log_softmax inside the model (a final one is not in the training graph: the loss
// reads the logits before it): inference's kernel over features or each pixel's channels.
bool emit_train_softmax(EmitContext& ctx, const ir::Node& n, size_t i) {
  if (ctx.train->readers[static_cast<size_t>(n.output)] == 0) {
    ctx.s.layers.line("// {}: not computed: nothing reads it", sanitize_comment(n.name));
    return true;
  }
  return emit_kernel_layer(ctx, n, i);
}

}  // namespace

bool emit_train_layer(EmitContext& ctx, const ir::Node& n) {
  const size_t i = static_cast<size_t>(&n - ctx.g.nodes.data());
  switch (n.op) {
    case ir::OpKind::Input:
      return emit_train_input(ctx, n, i);
    case ir::OpKind::Labels:
      return true;  // the caller's labels, read by the loss
    case ir::OpKind::Conv2d:
    case ir::OpKind::ConvTranspose2d:
      return emit_train_conv(ctx, n, i);
    case ir::OpKind::GlobalAvgPool:
    case ir::OpKind::MaxPool2d:
    case ir::OpKind::AvgPool2d:
      return emit_train_pool(ctx, n, i);
    case ir::OpKind::Softmax:
    case ir::OpKind::LogSoftmax:
      return emit_train_softmax(ctx, n, i);
    case ir::OpKind::BatchNorm2d:
      return emit_train_batchnorm(ctx, n, i);
    case ir::OpKind::Add:
      return n.inputs.size() == 1 ? emit_const_op(ctx, n, i) : emit_add(ctx, n, i);
    case ir::OpKind::Sub:
    case ir::OpKind::Div:  // of a scalar, or of two tensors of one shape
      return n.inputs.size() == 1 ? emit_const_op(ctx, n, i) : emit_binary(ctx, n, i);
    case ir::OpKind::Linear:
      return emit_train_linear(ctx, n, i);
    case ir::OpKind::Concat:
      return emit_concat(ctx, n, i);
    case ir::OpKind::Flatten:
    case ir::OpKind::Reshape:  // NCHW order on both sides
    case ir::OpKind::FlattenGrad:
      return emit_view(ctx, n);
    case ir::OpKind::Dropout:
    case ir::OpKind::DropoutGrad:
      return emit_train_dropout(ctx, n, i);
#define ZOC_ACTIVATION(op, grad, math)                                      \
  case ir::OpKind::op:                                                      \
    return emit_train_activation(ctx, n, i, "zoc::act::Kind::k" #math,      \
                                 ir::activation_params<act::math>(n));      \
  case ir::OpKind::grad:                                                    \
    return emit_train_activation_grad(ctx, n, i, "zoc::act::Kind::k" #math, \
                                      ir::activation_params<act::math>(n));
#include "compiler/ir/ops.def"
    case ir::OpKind::SoftmaxCrossEntropy:
      return emit_train_loss(ctx, n);
    case ir::OpKind::Conv2dGrad:
    case ir::OpKind::ConvTranspose2dGrad:
      return emit_train_conv_grad(ctx, n, i);
    case ir::OpKind::BatchNorm2dGrad:
      return emit_train_batchnorm_grad(ctx, n, i);
    case ir::OpKind::LinearGrad:
      return emit_train_linear_grad(ctx, n, i);
    case ir::OpKind::MaxPool2dGrad:
    case ir::OpKind::AvgPool2dGrad:
    case ir::OpKind::GlobalAvgPoolGrad:
      return emit_train_pool_grad(ctx, n, i);
    case ir::OpKind::SliceChannels:
      return emit_train_slice(ctx, n, i);
    case ir::OpKind::Mul:
      if (n.inputs.size() == 1) return emit_const_op(ctx, n, i);  // by a scalar
      return emit_kernel_layer(ctx, n, i);
    case ir::OpKind::ChannelShuffle:
    case ir::OpKind::AdaptiveAvgPool2d:
    case ir::OpKind::Pad:
    case ir::OpKind::UpsampleNearest:
    case ir::OpKind::UpsampleBilinear:
      return emit_kernel_layer(ctx, n, i);
    case ir::OpKind::LayerScale:
    case ir::OpKind::LayerNorm:
    case ir::OpKind::ChannelConv1d:
    case ir::OpKind::MulGrad:
    case ir::OpKind::LayerScaleGrad:
    case ir::OpKind::OperandGrad:
    case ir::OpKind::LayerNormGrad:
    case ir::OpKind::AdaptiveAvgPool2dGrad:
    case ir::OpKind::ChannelConv1dGrad:
    case ir::OpKind::PadChannels:
    case ir::OpKind::PadGrad:
    case ir::OpKind::UpsampleNearestGrad:
    case ir::OpKind::UpsampleBilinearGrad:
    case ir::OpKind::SoftmaxGrad:
    case ir::OpKind::LogSoftmaxGrad:
      return emit_train_kernel_layer(ctx, n, i);
    case ir::OpKind::Sgd:
      return true;  // the trainer's sgd() runs every update at once
    default:
      break;  // refused before the training graph (emit_trainer.cpp), or not built yet
  }
  ctx.diags.error(n.loc, fmt::format("layer '{}' ({}): the cuDNN backend does not support this op",
                                     shown_text(n.name), ir::op_info(n.op).name));
  return false;
}

}  // namespace zoc::cudnn
