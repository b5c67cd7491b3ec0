// Execution of the graph IR on the CPU, one kernel call per node (see interpreter.h): the op
// switch, the model's ops, and run(). Intermediate tensors are freed after their last use, so
// ResNet-152 runs in little memory.
#include "compiler/backend/reference/interpreter.h"

#include <fmt/format.h>

#include "compiler/backend/reference/kernels.h"
#include "compiler/backend/reference/node_shapes.h"
#include "compiler/backend/reference/runner.h"
#include "compiler/ir/activation_params.h"
#include "compiler/support/checked_math.h"
#include "zoc/weights/fold.h"

namespace zoc::ref {
namespace detail {

void Runner::allocate(ir::ValueId v) {
  const ir::TensorType& t = g_.type(v);
  Tensor& out = values_[v];
  out.shape = t.batched ? std::vector<int64_t>{n_} : std::vector<int64_t>{};
  out.shape.insert(out.shape.end(), t.dims.begin(), t.dims.end());
  out.data.assign(static_cast<size_t>((t.batched ? n_ : 1) * t.sample_numel()), 0.0f);
}

const float* Runner::param(const ir::Node& node, ir::ParamRole role) {
  for (const ir::ParamSpec& p : node.params) {
    if (p.role != role) continue;
    const std::vector<float>* v = w_.find(p.name);
    if (!v) {
      missing_ = p.name;
      return nullptr;
    }
    if (static_cast<int64_t>(v->size()) != checked_product_of(p.shape).value_or(-1)) {
      missing_ = p.name + " (wrong size)";
      return nullptr;
    }
    return v->data();
  }
  return nullptr;
}

Status Runner::exec(const ir::Node& node) {
  for (ir::ValueId v : ir::Graph::results(node)) allocate(v);
  dispatch(node);
  if (!missing_.empty()) {
    return Error{fmt::format("reference interpreter: layer '{}' ({}): no weights for '{}'",
                             node.name, ir::op_info(node.op).name, missing_)};
  }
  return Status::success();
}

// The op table's switch: each op's handler.
void Runner::dispatch(const ir::Node& node) {
  switch (node.op) {
#define ZOC_OP(id, spelling, min_in, max_in, user, summary) \
  case OpKind::id:                                          \
    run_op<OpKind::id>(node);                               \
    break;
#include "compiler/ir/ops.def"
  }
}

// The handlers of ops that share a helper, or do nothing (the input and labels: run() fills
// them), and the activations' (one generic kernel each way, zoc/math/activations.h).
#define ZOC_SHARED_HANDLER(id, call)                                       \
  template <>                                                              \
  void Runner::run_op<OpKind::id>([[maybe_unused]] const ir::Node& node) { \
    call;                                                                  \
  }
ZOC_SHARED_HANDLER(Input, {})
ZOC_SHARED_HANDLER(Labels, {})
ZOC_SHARED_HANDLER(Dropout, copy_input(node, 0))  // the identity, also in training mode
ZOC_SHARED_HANDLER(Flatten, copy_input(node, 0))  // NCHW order is already the flattened order
ZOC_SHARED_HANDLER(Reshape, copy_input(node, 0))
ZOC_SHARED_HANDLER(DropoutGrad, copy_input(node, 0))
ZOC_SHARED_HANDLER(FlattenGrad, copy_input(node, 1))
ZOC_SHARED_HANDLER(Add, binary(node))
ZOC_SHARED_HANDLER(Sub, binary(node))
ZOC_SHARED_HANDLER(Mul, binary(node))
ZOC_SHARED_HANDLER(Div, binary(node))
ZOC_SHARED_HANDLER(MaxPool2d, pool(node))
ZOC_SHARED_HANDLER(AvgPool2d, pool(node))
ZOC_SHARED_HANDLER(Softmax, softmax_any(node))  // over features (rows) or each pixel's channels
ZOC_SHARED_HANDLER(LogSoftmax, softmax_any(node))
ZOC_SHARED_HANDLER(UpsampleNearest, upsample(node))
ZOC_SHARED_HANDLER(UpsampleBilinear, upsample(node))
ZOC_SHARED_HANDLER(SoftmaxGrad, softmax_grad(node))
ZOC_SHARED_HANDLER(LogSoftmaxGrad, softmax_grad(node))
ZOC_SHARED_HANDLER(MaxPool2dGrad, pool_grad(node))
ZOC_SHARED_HANDLER(AvgPool2dGrad, pool_grad(node))
ZOC_SHARED_HANDLER(LayerScaleGrad, operand_grad(node))
ZOC_SHARED_HANDLER(OperandGrad, operand_grad(node))
ZOC_SHARED_HANDLER(UpsampleNearestGrad, upsample_grad(node))
ZOC_SHARED_HANDLER(UpsampleBilinearGrad, upsample_grad(node))
// with the batch's statistics in a training graph
ZOC_SHARED_HANDLER(BatchNorm2d,
                   node.attrs.flag("training") ? batchnorm2d_train(node) : batchnorm2d(node))
#define ZOC_ACTIVATION(op, grad, math)                                                             \
  ZOC_SHARED_HANDLER(op,                                                                           \
                     ref::activation<act::math>(in(node, 0), out(node.output), count(node.output), \
                                                ir::activation_params<act::math>(node)))           \
  ZOC_SHARED_HANDLER(grad, activation_backward<act::math>(in(node, 0), in(node, 1),                \
                                                          out(node.output), count(node.output),    \
                                                          ir::activation_params<act::math>(node)))
#define ZOC_REF_ACTIVATION(op, grad, math) ZOC_ACTIVATION(op, grad, math)
#include "compiler/ir/ops.def"
#undef ZOC_SHARED_HANDLER

template <>
void Runner::run_op<OpKind::GlobalAvgPool>(const ir::Node& node) {
  const std::vector<int64_t>& in_dims = dims(node.inputs[0]);
  global_avgpool(in(node, 0), out(node.output), n_, dims(node.output)[0], in_dims[1] * in_dims[2]);
}

template <>
void Runner::run_op<OpKind::Conv2d>(const ir::Node& node) {
  const float* w = param(node, ir::ParamRole::kWeight);
  const float* b = param(node, ir::ParamRole::kBias);
  if (!missing_.empty()) return;
  ref::conv2d(in(node, 0), w, b, out(node.output),
              conv_shape_of(node.attrs, dims(node.inputs[0]), dims(node.output), n_));
}

// conv + bias (+ folded BN) (+ residual) (+ ReLU), computed as the unfused layers would be,
// with the BN folded by the same arithmetic the generated code uses (zoc/weights/fold.h).
template <>
void Runner::run_op<OpKind::FusedConv2d>(const ir::Node& node) {
  const ir::Attrs& a = node.attrs;
  const Conv2dShape cs = conv_shape_of(a, dims(node.inputs[0]), dims(node.output), n_);
  const float* w = param(node, ir::ParamRole::kWeight);
  const float* b = param(node, ir::ParamRole::kBias);
  const bool bn = a.has("bn_eps");
  const float* gamma = bn ? param(node, ir::ParamRole::kBnWeight) : nullptr;
  const float* beta = bn ? param(node, ir::ParamRole::kBnBias) : nullptr;
  const float* mean = bn ? param(node, ir::ParamRole::kBnMean) : nullptr;
  const float* var = bn ? param(node, ir::ParamRole::kBnVar) : nullptr;
  if (!missing_.empty()) return;
  const int64_t per_k = cs.c_in / cs.groups * cs.kh * cs.kw;
  std::vector<float> w_eff(static_cast<size_t>(cs.c_out * per_k)), b_eff(cs.c_out);
  fold_conv_bias_bn(w, b, gamma, beta, mean, var, bn ? a.f("bn_eps") : 0.0, cs.c_out, per_k,
                    w_eff.data(), b_eff.data());
  if (a.has("int8_in")) {
    int8_conv(node, cs, w_eff, b_eff);
    return;
  }
  float* y = out(node.output);
  ref::conv2d(in(node, 0), w_eff.data(), b_eff.data(), y, cs);
  const int64_t n = count(node.output);
  if (node.inputs.size() == 2) add(y, in(node, 1), y, n);
  const ir::FusedActivation* fused = ir::fused_activation(static_cast<int>(a.i("activation")));
  if (!fused) return;
  const act::Params p = ir::fused_activation_params(node);
  switch (fused->kind) {
#define ZOC_ACTIVATION(op, grad, math)      \
  case act::Kind::k##math:                  \
    ref::activation<act::math>(y, y, n, p); \
    break;
#include "compiler/ir/ops.def"
  }
}

void Runner::batchnorm2d(const ir::Node& node) {
  const BnParams p = bn_params(node);
  if (!missing_.empty()) return;
  const std::vector<int64_t>& d = dims(node.inputs[0]);
  ref::batchnorm2d(in(node, 0), out(node.output), n_, d[0], d[1] * d[2], p.gamma, p.beta, p.mean,
                   p.var, node.attrs.f("eps"));
}

void Runner::pool(const ir::Node& node) {
  const bool is_max = node.op == ir::OpKind::MaxPool2d;
  const Pool2dShape ps =
      pool_shape_of(node.attrs, is_max, dims(node.inputs[0]), dims(node.output), n_);
  (is_max ? maxpool2d : avgpool2d)(in(node, 0), out(node.output), ps);
}

template <>
void Runner::run_op<OpKind::Linear>(const ir::Node& node) {
  const float* w = param(node, ir::ParamRole::kWeight);
  const float* b = param(node, ir::ParamRole::kBias);
  if (!missing_.empty()) return;
  ref::linear(in(node, 0), w, b, out(node.output), n_, dims(node.inputs[0])[0],
              dims(node.output)[0]);
}

template <>
void Runner::run_op<OpKind::Concat>(const ir::Node& node) {
  std::vector<const float*> ptrs;
  std::vector<int64_t> channels;
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    ptrs.push_back(in(node, i));
    channels.push_back(dims(node.inputs[i])[0]);
  }
  const std::vector<int64_t>& od = dims(node.output);
  concat_channels(ptrs, channels, out(node.output), n_, od[1] * od[2]);
}

template <>
void Runner::run_op<OpKind::LayerScale>(const ir::Node& node) {
  const float* gamma = param(node, ir::ParamRole::kScale);
  if (!missing_.empty()) return;
  const auto [c, hw] = channels_of(node.inputs[0]);
  channel_scale(in(node, 0), gamma, out(node.output), n_, c, hw);
}

template <>
void Runner::run_op<OpKind::LayerNorm>(const ir::Node& node) {
  const float* w = param(node, ir::ParamRole::kNormWeight);
  const float* b = param(node, ir::ParamRole::kNormBias);
  if (!missing_.empty()) return;
  const auto [c, hw] = channels_of(node.inputs[0]);
  ref::layernorm(in(node, 0), out(node.output), n_, c, hw, w, b, node.attrs.f("eps"));
}

template <>
void Runner::run_op<OpKind::ChannelShuffle>(const ir::Node& node) {
  const auto [c, hw] = channels_of(node.inputs[0]);
  ref::channel_shuffle(in(node, 0), out(node.output), n_, c, hw, node.attrs.i("groups"));
}

template <>
void Runner::run_op<OpKind::SliceChannels>(const ir::Node& node) {
  const auto [c, hw] = channels_of(node.inputs[0]);
  const int64_t count = node.attrs.i("count");
  copy_channels(in(node, 0), out(node.output), {n_, hw, c, node.attrs.i("start"), count, 0, count});
}

void Runner::copy_input(const ir::Node& node, size_t k) {
  values_[node.output].data = values_[node.inputs[k]].data;
}

Status Runner::run(const Tensor& input) {
  values_.assign(g_.values.size(), Tensor{});
  wide_.assign(g_.values.size(), {});
  // Last use of each value, so intermediates can be freed early.
  std::vector<size_t> last_use(g_.values.size(), 0);
  used_.assign(g_.values.size(), false);
  for (size_t i = 0; i < g_.nodes.size(); ++i) {
    for (ir::ValueId v : g_.nodes[i].inputs) {
      last_use[v] = i;
      used_[v] = true;
    }
  }
  for (ir::ValueId v : g_.outputs) {
    last_use[v] = g_.nodes.size();
    used_[v] = true;
  }
  for (size_t i = 0; i < g_.nodes.size(); ++i) {
    const ir::Node& node = g_.nodes[i];
    if (node.op == ir::OpKind::Input) {
      values_[node.output] = input;
      if (observe) observe(node.output, input);
      continue;
    }
    if (Status s = exec(node); !s) return s;
    if (observe) observe(node.output, values_[node.output]);
    for (ir::ValueId v : node.inputs) {
      if (last_use[v] != i) continue;
      values_[v] = Tensor{};
      wide_[v].clear();
    }
  }
  return Status::success();
}

std::string input_mismatch(const ir::Graph& graph, const Tensor& input) {
  const ir::Node* in_node = nullptr;
  for (const ir::Node& n : graph.nodes) {
    if (n.op == ir::OpKind::Input) in_node = &n;
  }
  if (!in_node) return "reference interpreter: the graph has no input";
  for (const ir::Value& v : graph.values) {
    if (!v.type) return "reference interpreter: the graph has untyped values";
  }
  const std::vector<int64_t>& want = graph.type(in_node->output).dims;
  auto shape_str = [](const std::vector<int64_t>& s) {
    std::string out;
    for (int64_t d : s) out += (out.empty() ? "" : "x") + std::to_string(d);
    return out;
  };
  if (input.shape.size() != want.size() + 1 || input.shape[0] < 1 ||
      !std::equal(want.begin(), want.end(), input.shape.begin() + 1)) {
    return fmt::format("input has shape {}, but model '{}' expects Nx{}", shape_str(input.shape),
                       graph.name, shape_str(want));
  }
  int64_t numel = 1;
  for (int64_t d : input.shape) numel *= d;
  if (static_cast<int64_t>(input.data.size()) != numel) {
    return "input data size does not match its shape";
  }
  return "";
}

}  // namespace detail

namespace {

constexpr int64_t kMaxTensorBytes = int64_t{16} << 30;

}  // namespace

Expected<std::vector<Tensor>> run(const ir::Graph& graph, const Weights& weights,
                                  const Tensor& input, const Observer& observe) {
  if (std::string why = detail::input_mismatch(graph, input); !why.empty()) return Error{why};
  // Every intermediate must fit: the batch comes from the user's input file.
  for (const ir::Value& v : graph.values) {
    auto bytes = checked_product({input.shape[0], v.type->sample_numel(), 4});
    if (!bytes || *bytes > kMaxTensorBytes) {
      return Error{
          fmt::format("batch {} is too large for the reference interpreter (a tensor "
                      "would exceed {} bytes)",
                      input.shape[0], kMaxTensorBytes)};
    }
  }
  for (const ir::Node& n : graph.nodes) {
    if (n.op == ir::OpKind::Labels) {
      return Error{
          fmt::format("reference interpreter: '{}' is a training graph: it takes "
                      "labels (run_training)",
                      graph.name)};
    }
  }
  detail::Runner runner(graph, weights, input.shape[0]);
  runner.observe = observe;
  if (Status s = runner.run(input); !s) return s.error();
  std::vector<Tensor> outs;
  for (ir::ValueId v : graph.outputs) outs.push_back(runner.value(v));
  return outs;
}

}  // namespace zoc::ref
