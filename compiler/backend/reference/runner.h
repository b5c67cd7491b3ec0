// The interpreter's machinery (internal to compiler/backend/reference): a Runner executes one
// graph node by node. Each op of the table (compiler/ir/ops.def) has one handler,
// `Runner::run_op<OpKind::X>`, declared for every op at the end of this file and defined in any
// file of this folder, usually beside its kernel; the dispatch switch is generated from the
// table (interpreter.cpp). So a new op adds its handler and nothing here: an op without one
// fails to link. The model's ops are in interpreter.cpp and model_ops.cpp, the training graph's
// in train_ops.cpp; the arithmetic is the kernels' (kernels.h, grad_kernels.h).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "compiler/backend/reference/interpreter.h"
#include "compiler/backend/reference/kernels.h"

namespace zoc::ref::detail {

using ir::OpKind;

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
  void dispatch(const ir::Node& node);  // the switch over the op table, to run_op<node.op>
  // The handler of op K: reads the node's attributes and parameters, calls its kernel.
  template <OpKind K>
  void run_op(const ir::Node& node);
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

  // Helpers that several ops' handlers share (each one's file in parentheses).
  // An int8 fused_conv2d (int8.cpp) from its weight and bias with any BatchNorm folded in.
  void int8_conv(const ir::Node& node, const Conv2dShape& cs, const std::vector<float>& w,
                 const std::vector<float>& bias);
  void batchnorm2d(const ir::Node& node);           // (interpreter.cpp)
  void pool(const ir::Node& node);                  // max and average
  void copy_input(const ir::Node& node, size_t k);  // dropout, flatten and their gradients
  void upsample(const ir::Node& node);              // nearest and bilinear (model_ops.cpp)
  void softmax_any(const ir::Node& node);           // softmax and log-softmax
  void binary(const ir::Node& node);                // add, sub, mul, div
  void batchnorm2d_train(const ir::Node& node);     // (train_ops.cpp)
  void softmax_grad(const ir::Node& node);
  void pool_grad(const ir::Node& node);
  void operand_grad(const ir::Node& node);
  void upsample_grad(const ir::Node& node);

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

// Every op's handler, declared from the table (an explicit specialization must be declared
// before the dispatch uses it).
#define ZOC_OP(id, spelling, min_in, max_in, user, summary) \
  template <>                                               \
  void Runner::run_op<OpKind::id>(const ir::Node& node);
#include "compiler/ir/ops.def"

}  // namespace zoc::ref::detail
