// The training graph's ops in the reference interpreter (see runner.h), and run_training. The
// graph says what each node reads and writes; the arithmetic is grad_kernels.h's, the same as
// the former separate training step's, so `zoc grad` gives the numbers it always gave.
#include <fmt/format.h>

#include <algorithm>

#include "compiler/backend/reference/grad_kernels.h"
#include "compiler/backend/reference/node_shapes.h"
#include "compiler/backend/reference/runner.h"
#include "compiler/ir/grad_rules.h"

namespace zoc::ref {
namespace detail {

// The gradient result of the node's parameter of this role: null where it has none (a frozen or
// absent parameter), which every backward kernel then skips.
float* Runner::param_grad(const ir::Node& node, ir::ParamRole role) {
  size_t k = 0;
  for (const ir::ParamSpec& p : node.params) {
    if (!p.trainable || p.frozen) continue;
    if (p.role == role) return k < node.extra_outputs.size() ? out(node.extra_outputs[k]) : nullptr;
    ++k;
  }
  return nullptr;
}

// PyTorch's training-mode batch norm: normalize with the batch's mean and biased variance,
// save the mean and 1/sqrt(var + eps) (kept in double) for the backward, and update the running
// averages, (1 - momentum) * old + momentum * batch, with the unbiased variance
// (m / (m - 1) for m = n * hw values per channel; a single value leaves it biased).
void Runner::batchnorm2d_train(const ir::Node& node) {
  const BnParams p = bn_params(node);
  if (!missing_.empty()) return;
  const std::vector<int64_t>& d = dims(node.inputs[0]);
  const int64_t c = d[0], hw = d[1] * d[2];
  std::vector<double> mean(c), var(c), invstd(c);
  ref::batchnorm2d_train(in(node, 0), out(node.output), n_, c, hw, p.gamma, p.beta,
                         node.attrs.f("eps"), mean.data(), var.data(), invstd.data());
  std::vector<double>& saved = wide_[node.extra_outputs.at(0)];
  saved = mean;
  saved.insert(saved.end(), invstd.begin(), invstd.end());
  std::transform(saved.begin(), saved.end(), out(node.extra_outputs[0]),
                 [](double v) { return static_cast<float>(v); });
  if (!training_) return;
  const double mom = node.attrs.f("momentum"), m = double(n_ * hw);
  std::vector<float> new_mean(c), new_var(c);
  for (int64_t k = 0; k < c; ++k) {
    const double unbiased = m > 1 ? var[k] * m / (m - 1) : var[k];
    new_mean[k] = float((1 - mom) * p.mean[k] + mom * mean[k]);
    new_var[k] = float((1 - mom) * p.var[k] + mom * unbiased);
  }
  for (const ir::ParamSpec& spec : node.params) {
    if (spec.role == ir::ParamRole::kBnMean)
      training_->result.buffers[spec.name] = std::move(new_mean);
    if (spec.role == ir::ParamRole::kBnVar)
      training_->result.buffers[spec.name] = std::move(new_var);
  }
}

template <>
void Runner::run_op<OpKind::SoftmaxCrossEntropy>(const ir::Node& node) {
  const double loss = ref::softmax_cross_entropy(in(node, 0), training_->labels.data(), n_,
                                                 dims(node.inputs[0])[0], out(node.output));
  wide_[node.extra_outputs.at(0)] = {loss};
  *out(node.extra_outputs[0]) = static_cast<float>(loss);
}

// An unused dx (the first layer's: the model input needs no gradient) is not computed.
template <>
void Runner::run_op<OpKind::Conv2dGrad>(const ir::Node& node) {
  const float* w = param(node, ir::ParamRole::kWeight);
  if (!missing_.empty()) return;
  conv2d_backward(in(node, 0), w, in(node, 1), used_[node.output] ? out(node.output) : nullptr,
                  param_grad(node, ir::ParamRole::kWeight), param_grad(node, ir::ParamRole::kBias),
                  conv_shape_of(node.attrs, dims(node.inputs[0]), dims(node.inputs[1]), n_));
}

template <>
void Runner::run_op<OpKind::BatchNorm2dGrad>(const ir::Node& node) {
  const float* gamma = param(node, ir::ParamRole::kBnWeight);
  if (!missing_.empty()) return;
  const std::vector<int64_t>& d = dims(node.inputs[0]);
  const int64_t c = d[0], hw = d[1] * d[2];
  const std::vector<double>& saved = wide_[node.inputs[2]];  // mean, then invstd
  batchnorm2d_train_backward(in(node, 0), in(node, 1), gamma, saved.data(), saved.data() + c, n_, c,
                             hw, out(node.output), param_grad(node, ir::ParamRole::kBnWeight),
                             param_grad(node, ir::ParamRole::kBnBias));
}

template <>
void Runner::run_op<OpKind::LinearGrad>(const ir::Node& node) {
  const float* w = param(node, ir::ParamRole::kWeight);
  if (!missing_.empty()) return;
  linear_backward(in(node, 0), w, in(node, 1), used_[node.output] ? out(node.output) : nullptr,
                  param_grad(node, ir::ParamRole::kWeight), param_grad(node, ir::ParamRole::kBias),
                  n_, dims(node.inputs[0])[0], dims(node.inputs[1])[0]);
}

// Over features (the rows), or the channels of each pixel; log_softmax_grad's with `log`.
void Runner::softmax_grad(const ir::Node& node) {
  const auto [c, hw] = channels_of(node.inputs[0]);
  softmax_dim1_backward(in(node, 0), in(node, 1), out(node.output), n_, c, hw,
                        node.op == ir::OpKind::LogSoftmaxGrad);
}

// maxpool2d_grad(x, y, dy) finds each window's maximum in x again; avgpool2d_grad(x, dy).
void Runner::pool_grad(const ir::Node& node) {
  const bool is_max = node.op == ir::OpKind::MaxPool2dGrad;
  const ir::ValueId dy = node.inputs.back();
  const Pool2dShape ps = pool_shape_of(node.attrs, is_max, dims(node.inputs[0]), dims(dy), n_);
  if (is_max) {
    maxpool2d_backward(in(node, 0), values_[dy].data.data(), out(node.output), ps);
  } else {
    avgpool2d_backward(values_[dy].data.data(), out(node.output), ps);
  }
}

template <>
void Runner::run_op<OpKind::GlobalAvgPoolGrad>(const ir::Node& node) {
  const std::vector<int64_t>& d = dims(node.inputs[0]);
  global_avgpool_backward(in(node, 1), out(node.output), n_, d[0], d[1] * d[2]);
}

template <>
void Runner::run_op<OpKind::MulGrad>(const ir::Node& node) {
  const auto [c, hw] = channels_of(node.inputs[0]);
  mul_backward(in(node, 0), in(node, 1), in(node, 2), out(node.output),
               out(node.extra_outputs.at(0)), n_, c, hw,
               dims(node.inputs[1]) != dims(node.inputs[0]));
}

// layer_scale's (a mul by its gamma), or an add's, sub's, mul's or div's by a parameter of the
// weights file (its one parameter, the operand: per channel or feature, or one value).
void Runner::operand_grad(const ir::Node& node) {
  const ir::ParamRole role = node.params.at(0).role;
  const float* v = param(node, role);
  if (!missing_.empty()) return;
  auto [c, hw] = channels_of(node.inputs[0]);
  if (node.op == ir::OpKind::OperandGrad && ir::one_value_operand(node)) hw *= c, c = 1;
  // layer_scale_grad's forward op is a mul; operand_grad's is its origin's.
  const BinaryOp op = node.op == ir::OpKind::OperandGrad
                          ? binary_op_of(g_.find_node(node.origin)->op)
                          : BinaryOp::kMul;
  operand_backward(op, node.attrs.flag("reverse"), in(node, 0), v, in(node, 1), out(node.output),
                   param_grad(node, role), n_, c, hw);
}

template <>
void Runner::run_op<OpKind::LayerNormGrad>(const ir::Node& node) {
  const float* w = param(node, ir::ParamRole::kNormWeight);
  if (!missing_.empty()) return;
  const auto [c, hw] = channels_of(node.inputs[0]);
  layernorm_backward(in(node, 0), in(node, 1), w, n_, c, hw, node.attrs.f("eps"), out(node.output),
                     param_grad(node, ir::ParamRole::kNormWeight),
                     param_grad(node, ir::ParamRole::kNormBias));
}

// dy into the zeros allocate() wrote.
template <>
void Runner::run_op<OpKind::PadChannels>(const ir::Node& node) {
  const auto [count, hw] = channels_of(node.inputs[0]);
  copy_channels(in(node, 0), out(node.output),
                {n_, hw, count, 0, node.attrs.i("channels"), node.attrs.i("start"), count});
}

// Each plane of dy without the rows above and below and the columns left and right of x's.
template <>
void Runner::run_op<OpKind::PadGrad>(const ir::Node& node) {
  const std::vector<int64_t>& from = dims(node.inputs[0]);
  const std::vector<int64_t>& to = dims(node.output);
  const int64_t top = node.attrs.i("top"), left = node.attrs.i("left");
  const float* dy = in(node, 0);
  float* dx = out(node.output);
  for (int64_t plane = 0; plane < n_ * to[0]; ++plane) {
    for (int64_t r = 0; r < to[1]; ++r) {
      const float* row = dy + (plane * from[1] + top + r) * from[2] + left;
      std::copy(row, row + to[2], dx + (plane * to[1] + r) * to[2]);
    }
  }
}

// dx gathers each tap's share of dy; the taps' and bias's gradients sum over every sample and
// output, in double (the forward's sums are).
template <>
void Runner::run_op<OpKind::ChannelConv1dGrad>(const ir::Node& node) {
  const float* w = param(node, ir::ParamRole::kWeight);
  if (!missing_.empty()) return;
  const ir::Attrs& a = node.attrs;
  const int64_t f = dims(node.inputs[0])[0], outs = dims(node.inputs[1])[0], k = a.i("kernel");
  const int64_t stride = a.i("stride"), padding = a.i("padding"), dilation = a.i("dilation");
  const float *x = in(node, 0), *dy = in(node, 1);
  float* dx = out(node.output);
  float* dw = param_grad(node, ir::ParamRole::kWeight);
  float* db = param_grad(node, ir::ParamRole::kBias);
  std::vector<double> dxs(static_cast<size_t>(n_ * f), 0.0), dws(static_cast<size_t>(k), 0.0);
  double dbs = 0;
  for (int64_t r = 0; r < n_; ++r) {
    for (int64_t o = 0; o < outs; ++o) {
      const double g = dy[r * outs + o];
      dbs += g;
      for (int64_t t = 0; t < k; ++t) {
        const int64_t i = o * stride - padding + t * dilation;
        if (i < 0 || i >= f) continue;
        dxs[static_cast<size_t>(r * f + i)] += static_cast<double>(w[t]) * g;
        dws[static_cast<size_t>(t)] += g * x[r * f + i];
      }
    }
  }
  std::transform(dxs.begin(), dxs.end(), dx, [](double v) { return static_cast<float>(v); });
  if (dw)
    std::transform(dws.begin(), dws.end(), dw, [](double v) { return static_cast<float>(v); });
  if (db) db[0] = static_cast<float>(dbs);
}

void Runner::upsample_grad(const ir::Node& node) {
  const UpsampleShape s =
      upsample_shape_of(node.attrs, dims(node.inputs[0]), dims(node.inputs[1]), n_);
  upsample_backward(in(node, 1), out(node.output), s, node.op == ir::OpKind::UpsampleBilinearGrad);
}

// conv_transpose2d(x) is conv2d's backward-data of x for the convolution from its output back to
// x, whose weight [C_in, C_out / groups, kh, kw] is PyTorch's: so dx is that convolution's
// forward of dy, dw its weight gradient with dy as its input and x as its output's gradient, and
// db the sum of dy over samples and pixels.
template <>
void Runner::run_op<OpKind::ConvTranspose2dGrad>(const ir::Node& node) {
  const float* w = param(node, ir::ParamRole::kWeight);
  if (!missing_.empty()) return;
  const float *x = in(node, 0), *dy = in(node, 1);
  const Conv2dShape s = conv_shape_of(node.attrs, dims(node.inputs[1]), dims(node.inputs[0]), n_);
  if (used_[node.output]) ref::conv2d(dy, w, nullptr, out(node.output), s);
  if (float* dw = param_grad(node, ir::ParamRole::kWeight)) {
    conv2d_backward(dy, w, x, nullptr, dw, nullptr, s);
  }
  if (float* db = param_grad(node, ir::ParamRole::kBias)) {
    const int64_t plane = s.h * s.w;
    std::vector<double> sums(static_cast<size_t>(s.c_in), 0.0);
    for (int64_t b = 0; b < n_; ++b) {
      for (int64_t c = 0; c < s.c_in; ++c) {
        const float* p = dy + (b * s.c_in + c) * plane;
        for (int64_t k = 0; k < plane; ++k) sums[static_cast<size_t>(c)] += p[k];
      }
    }
    std::transform(sums.begin(), sums.end(), db, [](double v) { return static_cast<float>(v); });
  }
}

template <>
void Runner::run_op<OpKind::AdaptiveAvgPool2dGrad>(const ir::Node& node) {
  adaptive_avgpool2d_backward(in(node, 1), out(node.output),
                              adaptive_shape_of(node.inputs[0], node.inputs[1]));
}

// PyTorch's SGD as zoc/kernels/train_kernels.cuh computes it, in float.
template <>
void Runner::run_op<OpKind::Sgd>(const ir::Node& node) {
  const ir::ParamSpec& p = node.params.at(0);
  const float* w = param(node, p.role);
  if (!missing_.empty() || !training_) return;
  const RunOptions& o = training_->options;
  const float* g = in(node, 0);
  float* updated = out(node.output);
  const auto count = static_cast<size_t>(this->count(node.output));
  std::vector<float> v(count, 0.0f);
  if (auto it = o.momentum_buffers.find(p.name); it != o.momentum_buffers.end()) {
    if (it->second.size() != count) {
      missing_ = fmt::format("{}'s momentum buffer (wrong size)", p.name);
      return;
    }
    v = it->second;
  }
  for (size_t i = 0; i < count; ++i) {
    const float d = g[i] + o.weight_decay * w[i];
    v[i] = o.momentum * v[i] + d;
    updated[i] = w[i] - o.lr * v[i];
  }
  training_->result.momentum_buffers[p.name] = std::move(v);
}

}  // namespace detail

namespace {

constexpr int64_t kMaxStepBytes = int64_t{16} << 30;

// The labels node's and the loss node's checks: one label per sample, each a class.
Status check_labels(const ir::Graph& graph, const std::vector<int32_t>& labels, int64_t n) {
  const ir::Node* loss = nullptr;
  for (const ir::Node& node : graph.nodes) {
    if (node.op == ir::OpKind::SoftmaxCrossEntropy) loss = &node;
  }
  if (!loss) {
    return Error{
        fmt::format("training step: '{}' is not a training graph (it has no loss)", graph.name)};
  }
  const int64_t classes = graph.type(loss->inputs[0]).dims.at(0);
  if (static_cast<int64_t>(labels.size()) != n) {
    return Error{fmt::format("training step: {} labels for a batch of {}", labels.size(), n)};
  }
  for (size_t k = 0; k < labels.size(); ++k) {
    if (labels[k] < 0 || labels[k] >= classes) {
      return Error{fmt::format("training step: label {} of sample {} is outside 0..{}", labels[k],
                               k, classes - 1)};
    }
  }
  return Status::success();
}

}  // namespace

Expected<TrainingResult> run_training(const ir::Graph& graph, const Weights& weights,
                                      const Tensor& input, const std::vector<int32_t>& labels,
                                      const RunOptions& options) {
  if (std::string why = detail::input_mismatch(graph, input); !why.empty()) {
    return Error{fmt::format("training step: the input does not match the graph: {}", why)};
  }
  const int64_t n = input.shape[0];
  if (Status s = check_labels(graph, labels, n); !s) return s.error();
  // Values live until the backward pass reads them: bound them all (the batch is a user's).
  int64_t per_sample = 0;
  for (const ir::Value& v : graph.values)
    per_sample += v.type->batched ? v.type->sample_numel() : 0;
  if (per_sample > kMaxStepBytes / 4 / n) {
    return Error{
        fmt::format("training step: batch {} is too large for the reference "
                    "interpreter (activations and gradients above {} bytes)",
                    n, kMaxStepBytes)};
  }
  TrainingResult result;
  detail::TrainingRun training{labels, options, result};
  detail::Runner runner(graph, weights, n, &training);
  if (Status s = runner.run(input); !s) return s.error();
  for (const ir::Node& node : graph.nodes) {
    if (node.op == ir::OpKind::SoftmaxCrossEntropy) {
      result.loss = runner.wide(node.extra_outputs.at(0)).at(0);
      result.logits = runner.value(node.inputs[0]);
    }
    for (const auto& [name, v] : ir::param_gradients(node))
      result.grads[name] = runner.value(v).data;
    if (node.op == ir::OpKind::Sgd) result.updated[node.origin] = runner.value(node.output).data;
  }
  return result;
}

}  // namespace zoc::ref
