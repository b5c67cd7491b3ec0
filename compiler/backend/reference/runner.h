// The interpreter's machinery (internal to compiler/backend/reference): a Runner executes one
// graph node by node through the switch over the op table (Runner::exec, interpreter.cpp). The
// ops' helpers are split by role: the model's ops in interpreter.cpp, the training graph's in
// train_ops.cpp; the arithmetic is the kernels' (kernels.h, grad_kernels.h).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "compiler/backend/reference/interpreter.h"
#include "compiler/backend/reference/kernels.h"

namespace zoc::ref::detail {

// What a run of a training graph adds: its labels, the optimizer's settings, and the results
// its nodes report as side effects (running statistics, momentum buffers).
struct TrainingRun {
  const std::vector<int32_t>& labels;
  const RunOptions& options;
  TrainingResult& result;
};

// The arithmetic of an add, sub, mul or div node (a binary node, or an operand_grad's forward).
BinaryOp binary_op_of(ir::OpKind op);

// Why `input` does not fit the graph's input (or the graph cannot run), or "" if it does.
std::string input_mismatch(const ir::Graph& graph, const Tensor& input);

class Runner {
 public:
  Runner(const ir::Graph& g, const Weights& w, int64_t batch, TrainingRun* training = nullptr)
      : g_(g), w_(w), n_(batch), training_(training) {}

  // Runs every node; intermediates are freed after their last use, the graph's outputs kept.
  Status run(const Tensor& input);
  Tensor& value(ir::ValueId v) { return values_[v]; }
  Observer observe;  // run(): sees each node's output after it runs
  const std::vector<double>& wide(ir::ValueId v) const { return wide_[v]; }

 private:
  Status exec(const ir::Node& node);    // dispatch, then a missing weight as an error
  void dispatch(const ir::Node& node);  // the one switch over the op table
  void allocate(ir::ValueId v);
  // The node's parameter of `role` (null if it has none; a missing or mis-sized tensor in the
  // weights is recorded in missing_).
  const float* param(const ir::Node& node, ir::ParamRole role);
  // A BatchNorm's weight, bias, running mean and running variance.
  struct BnParams {
    const float *gamma, *beta, *mean, *var;
  };
  BnParams bn_params(const ir::Node& node) {
    return {param(node, ir::ParamRole::kBnWeight), param(node, ir::ParamRole::kBnBias),
            param(node, ir::ParamRole::kBnMean), param(node, ir::ParamRole::kBnVar)};
  }
  // Where a backward node writes the gradient of its layer's parameter of `role` (an extra
  // result; null if the layer has none).
  float* param_grad(const ir::Node& node, ir::ParamRole role);
  const float* in(const ir::Node& node, size_t k) const {
    return values_[node.inputs[k]].data.data();
  }
  float* out(ir::ValueId v) { return values_[v].data.data(); }
  const std::vector<int64_t>& dims(ir::ValueId v) const { return g_.type(v).dims; }
  int64_t count(ir::ValueId v) const { return static_cast<int64_t>(values_[v].data.size()); }
  // A value's channels and the elements per channel of one sample: {C, H * W} of an image,
  // {F, 1} of features.
  std::pair<int64_t, int64_t> channels_of(ir::ValueId v) const {
    const std::vector<int64_t>& d = dims(v);
    int64_t rest = 1;
    for (size_t k = 1; k < d.size(); ++k) rest *= d[k];
    return {d.at(0), rest};
  }
  AdaptivePoolShape adaptive_shape_of(ir::ValueId x, ir::ValueId y) const {
    const std::vector<int64_t>&in = dims(x), &out = dims(y);
    return {n_ * in[0], in[1], in[2], out[1], out[2]};
  }

  // The model's ops (interpreter.cpp).
  void conv2d(const ir::Node& node);
  void fused_conv(const ir::Node& node);
  // An int8 fused_conv2d (int8.cpp) from its weight and bias with any BatchNorm folded in.
  void int8_conv(const ir::Node& node, const Conv2dShape& cs, const std::vector<float>& w,
                 const std::vector<float>& bias);
  void quantize(const ir::Node& node);
  void batchnorm2d(const ir::Node& node);
  void pool(const ir::Node& node);
  void linear(const ir::Node& node);
  void concat(const ir::Node& node);
  void layer_scale(const ir::Node& node);
  void layernorm(const ir::Node& node);
  void channel_shuffle(const ir::Node& node);
  void slice_channels(const ir::Node& node);
  template <class Math>
  void activation(const ir::Node& node);
  void copy_input(const ir::Node& node, size_t k);  // dropout, flatten and their gradients

  // The ops of issues 36 and 37 (model_ops.cpp).
  void upsample(const ir::Node& node);
  void adaptive_avgpool2d(const ir::Node& node);
  void conv_transpose2d(const ir::Node& node);
  void softmax_any(const ir::Node& node);
  void argmax(const ir::Node& node);
  void binary(const ir::Node& node);
  void pad(const ir::Node& node);
  void channel_conv1d(const ir::Node& node);

  // The training graph's ops (train_ops.cpp).
  void batchnorm2d_train(const ir::Node& node);
  void softmax_cross_entropy(const ir::Node& node);
  void conv2d_grad(const ir::Node& node);
  void batchnorm2d_grad(const ir::Node& node);
  void linear_grad(const ir::Node& node);
  template <class Math>
  void activation_grad(const ir::Node& node);
  void softmax_grad(const ir::Node& node);
  void pool_grad(const ir::Node& node);
  void global_avgpool_grad(const ir::Node& node);
  void mul_grad(const ir::Node& node);
  void operand_grad(const ir::Node& node);
  void layernorm_grad(const ir::Node& node);
  void pad_channels(const ir::Node& node);
  void pad_grad(const ir::Node& node);
  void channel_conv1d_grad(const ir::Node& node);
  void adaptive_avgpool2d_grad(const ir::Node& node);
  void upsample_grad(const ir::Node& node);
  void conv_transpose2d_grad(const ir::Node& node);
  void sgd(const ir::Node& node);

  const ir::Graph& g_;
  const Weights& w_;
  int64_t n_;
  TrainingRun* training_;
  std::vector<Tensor> values_;
  // The values the reference keeps wider than their f32 type, so that its arithmetic is what
  // one function computing them all would do: BatchNorm's saved statistics and the loss.
  // values_ holds them rounded.
  std::vector<std::vector<double>> wide_;
  std::vector<bool> used_;  // read by a node or a graph output
  std::string missing_;     // a parameter the weights lack, or have with the wrong size
};

}  // namespace zoc::ref::detail
