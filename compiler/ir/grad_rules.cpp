// Each op's gradient rule (see grad_rules.h), in the one switch over the op table. The math of
// each backward op is its kernel's (compiler/backend/reference/grad_kernels.h); these rules only
// wire values: what each backward op reads is an explicit input, so liveness is visible to the
// memory planner.
#include "compiler/ir/grad_rules.h"

#include <fmt/format.h>

#include "compiler/ir/activation_params.h"
#include "compiler/support/sanitize.h"
#include "zoc/math/activations.h"

namespace zoc::ir {
namespace {

constexpr const char* kFused =
    "a fused convolution: training takes the graph as written, before the inference passes";
constexpr const char* kTrainingOp =
    "a training-graph op: a training graph is built from a model as the frontend wrote it";

void nothing_upstream(GradContext&, const Node&) {}  // the input

void conv2d(GradContext& c, const Node& f) {
  c.backward(0, OpKind::Conv2dGrad, {c.x(0), c.dy()}, f.attrs, true);
}

void linear(GradContext& c, const Node& f) {
  c.backward(0, OpKind::LinearGrad, {c.x(0), c.dy()}, f.attrs, true);
}

// With the statistics the training-mode forward saved (batch mean and inverse std).
void batchnorm2d(GradContext& c, const Node&) {
  c.backward(0, OpKind::BatchNorm2dGrad, {c.x(0), c.dy(), c.saved()}, {}, true);
}

template <class Math, OpKind kGrad>
void activation(GradContext& c, const Node& f) {
  bool from_output = Math::kFromOutput;
  if constexpr (requires { Math::reads_output(act::Params{}); }) {
    from_output = Math::reads_output(activation_params<Math>(f));
  }
  c.backward(0, kGrad, {from_output ? c.y() : c.x(0), c.dy()}, f.attrs, false);
}

// Over features or the channels of each pixel, from the output alone.
void softmax(GradContext& c, const Node&) {
  c.backward(0, OpKind::SoftmaxGrad, {c.y(), c.dy()}, {}, false);
}

void log_softmax(GradContext& c, const Node&) {
  c.backward(0, OpKind::LogSoftmaxGrad, {c.y(), c.dy()}, {}, false);
}

// x to find each window's maximum again; y because cuDNN's pooling backward reads it.
void maxpool2d(GradContext& c, const Node& f) {
  c.backward(0, OpKind::MaxPool2dGrad, {c.x(0), c.y(), c.dy()}, f.attrs, false);
}

void avgpool2d(GradContext& c, const Node& f) {
  c.backward(0, OpKind::AvgPool2dGrad, {c.x(0), c.dy()}, f.attrs, false);
}

void global_avgpool(GradContext& c, const Node&) {
  c.backward(0, OpKind::GlobalAvgPoolGrad, {c.x(0), c.dy()}, {}, false);
}

void flatten(GradContext& c, const Node&) {
  c.backward(0, OpKind::FlattenGrad, {c.x(0), c.dy()}, {}, false);
}

// The mask is a function of the step's seed and the layer (zoc/kernels/train_kernels.cuh), so the
// backward reads dy alone.
void dropout(GradContext& c, const Node& f) {
  Attrs attrs = f.attrs;
  attrs.set("training", AttrValue{AttrKind::Bool, 1, {}, 0});
  c.backward(0, OpKind::DropoutGrad, {c.dy()}, attrs, false);
}

AttrValue int_value(int64_t v) { return AttrValue{AttrKind::Int, v, {}, 0}; }

// -g, as a mul by the constant -1 (zoc's const_op kernel on the GPU).
Attrs negated() {
  Attrs attrs;
  attrs.set("scalar", AttrValue{AttrKind::Float, 0, {}, -1.0});
  return attrs;
}

// x op g, g a parameter of the weights file (per channel, per feature or one value): dx and
// g's gradient, summed where g broadcasts, in one node (operand_grad). An add's or sub's reads
// no x: dy, of x's shape, stands in for it, so that x is not kept for the backward pass. A
// buffer stays fixed: the rules below take it as a constant.
bool by_parameter(GradContext& c, const Node& f) {
  if (f.inputs.size() != 1 || f.operand_role != OperandRole::kParameter) return false;
  const bool reads_x = f.op == OpKind::Mul || f.op == OpKind::Div;
  c.backward(0, OpKind::OperandGrad, {reads_x ? c.x(0) : c.dy(), c.dy()}, f.attrs, true);
  return true;
}

// d(a + b) = da + db: dy is each operand's gradient, with no node; likewise x + c's.
void add(GradContext& c, const Node& f) {
  if (by_parameter(c, f)) return;
  c.pass_through(0, c.dy());
  if (f.inputs.size() == 2) c.pass_through(1, c.dy());
}

// a - b: da = dy, db = -dy; x - c: dy; c - x (`reverse`): -dy.
void sub(GradContext& c, const Node& f) {
  if (by_parameter(c, f)) return;
  if (f.inputs.size() == 1 && f.attrs.flag("reverse")) {
    c.backward(0, OpKind::Mul, {c.dy()}, negated(), false);
    return;
  }
  c.pass_through(0, c.dy());
  if (f.inputs.size() == 2 && c.needs(1)) c.backward(1, OpKind::Mul, {c.dy()}, negated(), false);
}

// a / b: da = dy / b, db = -dy * a / b^2 = -(da * y), PyTorch's -dy * ((a / b) / b) reordered;
// x / c: dy / c (the forward's op and scalar again); c / x (`reverse`): -dy * c / x^2 =
// -(dy * y) / x.
void div(GradContext& c, const Node& f) {
  if (by_parameter(c, f)) return;
  if (f.inputs.size() == 1) {
    if (!f.attrs.flag("reverse")) {
      c.same_constant(0);
      return;
    }
    const ValueId t = c.temp(0, "dy_y", OpKind::Mul, {c.dy(), c.y()}, {});
    const ValueId u = c.temp(0, "over_x", OpKind::Div, {t, c.x(0)}, {});
    c.backward(0, OpKind::Mul, {u}, negated(), false);
    return;
  }
  const ValueId da = c.backward(0, OpKind::Div, {c.dy(), c.x(1)}, {}, false);
  if (!c.needs(1)) return;
  const ValueId t = c.temp(1, "da_y", OpKind::Mul, {da, c.y()}, {});
  c.backward(1, OpKind::Mul, {t}, negated(), false);
}

// The elements do not move: dy viewed in x's shape, as flatten's.
void reshape(GradContext& c, const Node&) {
  c.backward(0, OpKind::FlattenGrad, {c.x(0), c.dy()}, {}, false);
}

void concat(GradContext& c, const Node& f) {
  int64_t start = 0;
  for (size_t k = 0; k < f.inputs.size(); ++k) {
    const int64_t count = c.input_type(k).dims.at(0);
    if (c.needs(k)) {
      Attrs attrs;
      attrs.set("start", int_value(start));
      attrs.set("count", int_value(count));
      c.backward(k, OpKind::SliceChannels, {c.dy()}, attrs, false);
    }
    start += count;
  }
}

// d(a * b): da = dy * b, db = dy * a (summed over H and W where b broadcasts), one node;
// x * c's: dy * c, the forward's op and constant again; x * g, g a parameter of the weights file
// (ConvNeXt's gamma, hgnetv2's scale): operand_grad, dx = dy * g, dg = the sum of dy * x.
void mul(GradContext& c, const Node& f) {
  if (by_parameter(c, f)) return;
  if (f.inputs.size() == 1) {
    c.same_constant(0);
    return;
  }
  const ValueId da = c.backward(0, OpKind::MulGrad, {c.x(0), c.x(1), c.dy()}, {}, false);
  c.also_backward(da, 1);
}

void layer_scale(GradContext& c, const Node& f) {
  c.backward(0, OpKind::LayerScaleGrad, {c.x(0), c.dy()}, f.attrs, true);
}

// The per-pixel statistics are recomputed from x: cheaper to keep than x's mean and variance
// per pixel would be.
void layernorm(GradContext& c, const Node& f) {
  c.backward(0, OpKind::LayerNormGrad, {c.x(0), c.dy()}, f.attrs, true);
}

// A shuffle by g is a permutation; its inverse is the shuffle by C / g.
void channel_shuffle(GradContext& c, const Node& f) {
  Attrs attrs;
  attrs.set("groups", int_value(c.input_type(0).dims.at(0) / f.attrs.i("groups")));
  c.backward(0, OpKind::ChannelShuffle, {c.dy()}, attrs, false);
}

void slice_channels(GradContext& c, const Node& f) {
  Attrs attrs;
  attrs.set("start", int_value(f.attrs.i("start")));
  attrs.set("channels", int_value(c.input_type(0).dims.at(0)));
  c.backward(0, OpKind::PadChannels, {c.dy()}, attrs, false);
}

// ECA's 1-D convolution over the features: dx, and its taps' and bias's gradients, one node.
void channel_conv1d(GradContext& c, const Node& f) {
  c.backward(0, OpKind::ChannelConv1dGrad, {c.x(0), c.dy()}, f.attrs, true);
}

// The padded elements are constants: dx is dy without them.
void pad(GradContext& c, const Node& f) {
  c.backward(0, OpKind::PadGrad, {c.dy()}, f.attrs, false);
}

void adaptive_avgpool2d(GradContext& c, const Node& f) {
  c.backward(0, OpKind::AdaptiveAvgPool2dGrad, {c.x(0), c.dy()}, f.attrs, false);
}

// The forward's index arithmetic read backwards: each dy goes to the pixels it was read from.
void upsample(GradContext& c, const Node& f) {
  const OpKind op =
      f.op == OpKind::UpsampleNearest ? OpKind::UpsampleNearestGrad : OpKind::UpsampleBilinearGrad;
  c.backward(0, op, {c.x(0), c.dy()}, f.attrs, false);
}

// A transposed convolution is conv2d's backward-data: its dx is conv2d's forward of dy, its
// weight's gradient conv2d's with x and dy exchanged.
void conv_transpose2d(GradContext& c, const Node& f) {
  c.backward(0, OpKind::ConvTranspose2dGrad, {c.x(0), c.dy()}, f.attrs, true);
}

}  // namespace

GradRule grad_rule(OpKind op) {
  switch (op) {
    case OpKind::Argmax:  // the model's last is left out (an inference output)
      return {nullptr,
              "argmax has no gradient (its result is an index); training leaves out only a "
              "model's final argmax, whose input the loss reads"};
    case OpKind::UpsampleNearest:
    case OpKind::UpsampleBilinear:
      return {upsample};
    case OpKind::ConvTranspose2d:
      return {conv_transpose2d};
    case OpKind::LogSoftmax:  // the model's last, over features, is left out (the loss's)
      return {log_softmax};
    case OpKind::Input:
      return {nothing_upstream};
    case OpKind::Sub:
      return {sub};
    case OpKind::Div:
      return {div};
    case OpKind::Reshape:
      return {reshape};
    case OpKind::Pad:
      return {pad};
    case OpKind::ChannelConv1d:
      return {channel_conv1d};
    case OpKind::Conv2d:
      return {conv2d};
    case OpKind::BatchNorm2d:
      return {batchnorm2d};
    case OpKind::Linear:
      return {linear};
    case OpKind::Softmax:
      return {softmax};
    case OpKind::MaxPool2d:
      return {maxpool2d};
    case OpKind::AvgPool2d:
      return {avgpool2d};
    case OpKind::GlobalAvgPool:
      return {global_avgpool};
    case OpKind::Flatten:
      return {flatten};
    case OpKind::Dropout:
      return {dropout};
    case OpKind::Add:
      return {add};
    case OpKind::Concat:
      return {concat};
    case OpKind::Mul:
      return {mul};
    case OpKind::LayerScale:
      return {layer_scale};
    case OpKind::LayerNorm:
      return {layernorm};
    case OpKind::ChannelShuffle:
      return {channel_shuffle};
    case OpKind::SliceChannels:
      return {slice_channels};
    case OpKind::AdaptiveAvgPool2d:
      return {adaptive_avgpool2d};
#define ZOC_ACTIVATION(op, grad, math)                 \
  case OpKind::op:                                     \
    return {activation<zoc::act::math, OpKind::grad>}; \
  case OpKind::grad:                                   \
    return {nullptr, kTrainingOp};
#define ZOC_REF_ACTIVATION(op, grad, math) ZOC_ACTIVATION(op, grad, math)
#include "compiler/ir/ops.def"
    case OpKind::FusedConv2d:
    case OpKind::Quantize:
      return {nullptr, kFused};
    case OpKind::Labels:
    case OpKind::SoftmaxCrossEntropy:
    case OpKind::Conv2dGrad:
    case OpKind::BatchNorm2dGrad:
    case OpKind::LinearGrad:
    case OpKind::SoftmaxGrad:
    case OpKind::LogSoftmaxGrad:
    case OpKind::MaxPool2dGrad:
    case OpKind::AvgPool2dGrad:
    case OpKind::GlobalAvgPoolGrad:
    case OpKind::FlattenGrad:
    case OpKind::DropoutGrad:
    case OpKind::MulGrad:
    case OpKind::LayerScaleGrad:
    case OpKind::OperandGrad:
    case OpKind::LayerNormGrad:
    case OpKind::PadChannels:
    case OpKind::PadGrad:
    case OpKind::ChannelConv1dGrad:
    case OpKind::AdaptiveAvgPool2dGrad:
    case OpKind::UpsampleNearestGrad:
    case OpKind::UpsampleBilinearGrad:
    case OpKind::ConvTranspose2dGrad:
    case OpKind::Sgd:
      return {nullptr, kTrainingOp};
  }
  return {nullptr, kTrainingOp};
}

namespace {

// A constant read from a tensor of the model: a buffer stays fixed, a parameter PyTorch trains
// gets its gradient (operand_grad); one that may be either is refused: kept fixed, training
// would differ from PyTorch's without a word.
std::string operand_refusal(const Node& n) {
  if (n.operand_tensor.empty() && n.scalar_from.empty()) return "";
  const std::string name = shown_text(n.operand_tensor.empty() ? n.scalar_from : n.operand_tensor);
  // The trainer does not check a constant compiled in against the weights file it loads (the
  // inference code does), and would not read a new value from it.
  if (!n.scalar_from.empty()) {
    return fmt::format(
        "no gradient rule for a one-element {} ('{}') compiled in as a constant yet (inference "
        "only)",
        n.operand_role == OperandRole::kBuffer ? "buffer" : "tensor", name);
  }
  if (n.operand_role != OperandRole::kUnknown) return "";
  return fmt::format(
      "an operand from the weights file ('{}') that may be a parameter, which PyTorch "
      "trains, or a buffer, which it keeps fixed: training needs to know which (a TorchScript "
      "model says; in YAML write `parameter:` or `buffer:` for `tensor:`; an ONNX "
      "initializer does not say)",
      name);
}

}  // namespace

std::string grad_form_refusal(const Graph& g, const Node& n) {
  const auto rank = [&](size_t k) { return g.type(n.inputs[k]).dims.size(); };
  const auto dims = [&](size_t k) { return g.type(n.inputs[k]).dims; };
  // add's rule passes dy to both operands, mul's reduces over a channel vector's H and W: what
  // the two-input forms of one shape (and an image times its channel vector) need.
  const bool same_shape = n.inputs.size() == 2 && dims(0) == dims(1);
  const bool channel_vector =
      n.inputs.size() == 2 && rank(0) == 3 && dims(1) == std::vector<int64_t>{dims(0)[0], 1, 1};
  const bool constant = n.inputs.size() == 1;
  if (std::string why = operand_refusal(n); !why.empty()) return why;
  switch (n.op) {
    case OpKind::Add:
    case OpKind::Sub:
    case OpKind::Div:
      if (!same_shape && !constant) {
        return fmt::format("no gradient rule for {} with broadcasting yet (inference only)",
                           n.op == OpKind::Add   ? "an add"
                           : n.op == OpKind::Sub ? "a sub"
                                                 : "a div");
      }
      break;
    case OpKind::Mul:
      if (!same_shape && !channel_vector && !constant) {
        return "no gradient rule for a mul with broadcasting (other than an image by its "
               "channel vector) yet (inference only)";
      }
      break;
    default:
      break;
  }
  return "";
}

std::vector<std::pair<std::string, ValueId>> param_gradients(const Node& node) {
  if (node.op != OpKind::Conv2dGrad && node.op != OpKind::BatchNorm2dGrad &&
      node.op != OpKind::LinearGrad && node.op != OpKind::LayerScaleGrad &&
      node.op != OpKind::OperandGrad && node.op != OpKind::LayerNormGrad &&
      node.op != OpKind::ChannelConv1dGrad && node.op != OpKind::ConvTranspose2dGrad) {
    return {};
  }
  std::vector<std::pair<std::string, ValueId>> grads;
  size_t k = 0;  // the extra result of the k-th parameter that trains (none for a frozen one)
  for (const ParamSpec& p : node.params) {
    if (!p.trainable || p.frozen || k >= node.extra_outputs.size()) continue;
    grads.emplace_back(p.name, node.extra_outputs[k++]);
  }
  return grads;
}

}  // namespace zoc::ir
