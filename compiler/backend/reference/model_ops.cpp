// The Runner's methods for the model ops of issues 36 and 37 (dense prediction and the forms of
// hand-written and timm models): each reads its node's attributes and parameters and calls one
// kernel of kernels.h. The op switch that reaches them is Runner::exec (interpreter.cpp); this
// file keeps that one from growing past a screenful per family.
#include <utility>

#include "compiler/backend/reference/kernels.h"
#include "compiler/backend/reference/node_shapes.h"
#include "compiler/backend/reference/runner.h"

namespace zoc::ref::detail {

void Runner::upsample(const ir::Node& node) {
  const UpsampleShape s =
      upsample_shape_of(node.attrs, dims(node.inputs[0]), dims(node.output), n_);
  if (node.op == ir::OpKind::UpsampleNearest) {
    upsample_nearest(in(node, 0), out(node.output), s);
  } else {
    upsample_bilinear(in(node, 0), out(node.output), s);
  }
}

template <>
void Runner::run_op<OpKind::AdaptiveAvgPool2d>(const ir::Node& node) {
  ref::adaptive_avgpool2d(in(node, 0), out(node.output),
                          adaptive_shape_of(node.inputs[0], node.output));
}

template <>
void Runner::run_op<OpKind::ConvTranspose2d>(const ir::Node& node) {
  const float* w = param(node, ir::ParamRole::kWeight);
  const float* b = param(node, ir::ParamRole::kBias);
  if (!missing_.empty()) return;
  ref::conv_transpose2d(in(node, 0), w, b, out(node.output),
                        conv_shape_of(node.attrs, dims(node.inputs[0]), dims(node.output), n_));
}

// softmax over features (rows) or the channels of an image, and log_softmax of either form.
void Runner::softmax_any(const ir::Node& node) {
  const auto [c, hw] = channels_of(node.inputs[0]);
  if (node.op == ir::OpKind::Softmax && dims(node.output).size() == 1) {
    softmax(in(node, 0), out(node.output), n_, c);
    return;
  }
  ref::softmax_dim1(in(node, 0), out(node.output), n_, c, hw, node.op == ir::OpKind::LogSoftmax);
}

template <>
void Runner::run_op<OpKind::Argmax>(const ir::Node& node) {
  const auto [c, hw] = channels_of(node.inputs[0]);
  argmax_dim1(in(node, 0), out(node.output), n_, c, hw);
}

// add, sub, mul, div: the second operand is the other input, `scalar`, or the operand tensor,
// per channel (its numbers in channel order whatever the rank it is stored with) or one value.
void Runner::binary(const ir::Node& node) {
  const std::vector<int64_t>& y = dims(node.output);
  Operand a{in(node, 0), dims(node.inputs[0]), true};
  Operand b{nullptr, std::vector<int64_t>(y.size(), 1), false};
  float scalar = 0;
  if (node.inputs.size() == 2) {
    b = {in(node, 1), dims(node.inputs[1]), true};
  } else if (node.attrs.has("scalar")) {
    scalar = static_cast<float>(node.attrs.f("scalar"));  // as PyTorch casts a Python number
    b.data = &scalar;
  } else {
    b.data = param(node, ir::ParamRole::kOperand);
    if (!missing_.empty()) return;
    if (!ir::one_value_operand(node)) b.dims[0] = y[0];  // per channel or feature
  }
  if (node.attrs.flag("reverse")) std::swap(a, b);
  ref::binary(binary_op_of(node.op), a, b, out(node.output), n_, y);
}

BinaryOp binary_op_of(ir::OpKind op) {
  switch (op) {
    case ir::OpKind::Sub:
      return BinaryOp::kSub;
    case ir::OpKind::Mul:
      return BinaryOp::kMul;
    case ir::OpKind::Div:
      return BinaryOp::kDiv;
    default:
      return BinaryOp::kAdd;
  }
}

template <>
void Runner::run_op<OpKind::Pad>(const ir::Node& node) {
  const std::vector<int64_t>& x = dims(node.inputs[0]);
  const ir::Attrs& a = node.attrs;
  pad_constant(in(node, 0), out(node.output),
               {n_ * x[0], x[1], x[2], a.i("top"), a.i("left"), a.i("bottom"), a.i("right")},
               static_cast<float>(a.f("value")));
}

template <>
void Runner::run_op<OpKind::ChannelConv1d>(const ir::Node& node) {
  const float* w = param(node, ir::ParamRole::kWeight);
  const float* b = param(node, ir::ParamRole::kBias);
  if (!missing_.empty()) return;
  const ir::Attrs& a = node.attrs;
  ref::channel_conv1d(in(node, 0), w, b, out(node.output),
                      {n_, dims(node.inputs[0])[0], dims(node.output)[0], a.i("kernel"),
                       a.i("stride"), a.i("padding"), a.i("dilation")});
}

}  // namespace zoc::ref::detail
