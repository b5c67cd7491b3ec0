// The reference interpreter running training graphs (ref::run_training): every parameter's
// gradient equals a central finite difference of the loss on small models that use every
// differentiable op (the classic layers, and the CNN zoo's), and the sgd nodes take PyTorch's
// step. train_step_test.cpp checks the
// refusals; tests/train compares with PyTorch autograd.
#include <gtest/gtest.h>

#include <cmath>

#include "compiler/backend/reference/interpreter.h"
#include "compiler/passes/pipeline.h"
#include "tests/unit/test_util.h"

namespace zoc {
namespace {

constexpr const char* kEveryOp = R"(zoc: 1
name: every_op
input: {channels: 2, height: 6, width: 6}
layers:
  - conv: {op: conv2d, out_channels: 4, kernel: 3, padding: 1}
  - bn: {op: batchnorm2d}
  - act: {op: tanh}
  - side: {op: conv2d, out_channels: 4, kernel: 1, bias: false, input: input}
  - sum: {op: add, inputs: [act, side]}
  - sig: {op: sigmoid}
  - swish: {op: silu}
  - avg: {op: avgpool2d, kernel: 2}
  - max: {op: maxpool2d, kernel: 2, input: sum}
  - cat: {op: concat, inputs: [avg, max]}
  - relu: {op: relu}
  - gap: {op: global_avgpool}
  - flat: {op: flatten}
  - soft: {op: softmax}
  - drop: {op: dropout, p: 0.3}
  - fc: {op: linear, out_features: 3}
)";

// The CNN zoo's ops: layer norm (images and features), layer scale, squeeze-and-excitation's
// broadcast multiply and a same-shape one, channel shuffle and slices, adaptive pooling whose
// bins overlap (5 -> 3) and do not divide (5 -> 4).
constexpr const char* kZooOps = R"(zoc: 1
name: zoo_ops
input: {channels: 2, height: 5, width: 5}
layers:
  - conv: {op: conv2d, out_channels: 4, kernel: 3, padding: 1}
  - ln: {op: layernorm, eps: 1e-6}
  - ls: {op: layer_scale}
  - act: {op: gelu}
  - gap: {op: global_avgpool}
  - se: {op: conv2d, out_channels: 4, kernel: 1}
  - gate: {op: sigmoid}
  - scaled: {op: mul, inputs: [act, gate]}
  - square: {op: mul, inputs: [scaled, conv]}
  - shuffle: {op: channel_shuffle, groups: 2}
  - lo: {op: slice_channels, start: 0, count: 1}
  - hi: {op: slice_channels, start: 1, count: 3, input: shuffle}
  - cat: {op: concat, inputs: [hi, lo]}
  - pool: {op: adaptive_avgpool2d, output_size: [3, 4]}
  - flat: {op: flatten}
  - lnf: {op: layernorm}
  - fc: {op: linear, out_features: 3}
)";

struct Fixture {
  test::TempDir dir;
  ir::Graph model;
  ir::Graph graph;  // its training graph
  Weights weights;
  ref::Tensor input;
  std::vector<int32_t> labels{2, 0, 1};

  explicit Fixture(bool optimizer, const char* text = kEveryOp, int64_t channels = 2,
                   int64_t side = 6) {
    Diagnostics d;
    auto m = test::load(dir.write("m.yaml", text), d);
    EXPECT_TRUE(m) << d.render();
    model = *m;
    auto t = passes::build_training_graph(model, {.optimizer = optimizer}, d);
    EXPECT_TRUE(t) << d.render();
    graph = *t;
    weights = init_weights(model, 5);
    input.shape = {3, channels, side, side};
    for (int64_t i = 0; i < 3 * channels * side * side; ++i) {
      input.data.push_back(std::sin(0.61f * float(i) + 0.3f));
    }
  }
  double loss(const Weights& w) const {
    auto r = ref::run_training(graph, w, input, labels);
    EXPECT_TRUE(r) << r.error().message;
    return r ? r->loss : 0.0;
  }
};

// Checks every parameter gradient of one training step against central differences of the
// loss; returns how many elements it checked.
int check_gradients(const Fixture& f, const ref::TrainingResult& r) {
  int checked = 0;
  for (const auto& [name, grad] : r.grads) {
    EXPECT_EQ(grad.size(), f.weights.tensors.at(name).size()) << name;
    for (size_t i = 0; i < grad.size() && grad.size() == f.weights.tensors.at(name).size(); ++i) {
      Weights up = f.weights, down = f.weights;
      const float h = 1e-3f;
      up.tensors.at(name)[i] += h;
      down.tensors.at(name)[i] -= h;
      const double step = double(up.tensors.at(name)[i]) - down.tensors.at(name)[i];
      const double numeric = (f.loss(up) - f.loss(down)) / step;
      EXPECT_NEAR(numeric, grad[i], 2e-4 + 1e-2 * std::fabs(grad[i])) << name << "[" << i << "]";
      ++checked;
    }
  }
  return checked;
}

// One training step of `model` (a 2-channel 4x4 input) whose `grads` parameter gradients, of
// `elements` elements in all, each equal the loss's central finite difference. `spread`: these
// tensors (initialized to 1) hold distinct values from 0.6 up instead, so that a rule that
// drops or inverts them shows.
void expect_finite_differences(const char* model, size_t grads, int elements,
                               const std::vector<std::string>& spread = {}) {
  Fixture f(false, model, 2, 4);
  for (const std::string& name : spread) {
    std::vector<float>& t = f.weights.tensors.at(name);
    for (size_t i = 0; i < t.size(); ++i) t[i] = 0.6f + 0.35f * float(i + 1);
  }
  auto r = ref::run_training(f.graph, f.weights, f.input, f.labels);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->grads.size(), grads);
  EXPECT_EQ(check_gradients(f, *r), elements);
}

TEST(TrainingInterpreter, EveryGradientIsTheLossesFiniteDifference) {
  Fixture f(false);
  auto r = ref::run_training(f.graph, f.weights, f.input, f.labels);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->grads.size(), 7u);  // conv w/b, bn w/b, side w, fc w/b
  EXPECT_TRUE(r->updated.empty());
  EXPECT_EQ(r->logits.shape, (std::vector<int64_t>{3, 3}));
  EXPECT_EQ(check_gradients(f, *r), 72 + 4 + 4 + 4 + 8 + 24 + 3);
  EXPECT_EQ(r->buffers.size(), 2u);  // bn's running mean and variance
}

// mul's db reaches `se` and `conv` (through the same-shape mul too); layer scale, both layer
// norms and the pooling, shuffle and slices lie between every parameter and the loss.
TEST(TrainingInterpreter, ZooOpGradientsAreTheLossesFiniteDifference) {
  Fixture f(false, kZooOps, 2, 5);
  auto r = ref::run_training(f.graph, f.weights, f.input, f.labels);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->grads.size(), 11u);  // conv w/b, ln w/b, ls, se w/b, lnf w/b, fc w/b
  EXPECT_EQ(check_gradients(f, *r), 72 + 4 + 4 + 4 + 4 + 16 + 4 + 48 + 48 + 144 + 3);
}

// Arithmetic with a scalar both ways round (1 / x, 1 - x), sub and div of two tensors, a
// reshape, constant padding and a final log_softmax, which the loss reads through
// (tests/train/arith_ops.yaml at a smaller size): every gradient reaches the three convolutions
// through them.
TEST(TrainingInterpreter, ArithmeticGradientsAreTheLossesFiniteDifference) {
  expect_finite_differences(R"(zoc: 1
input: {channels: 2, height: 4, width: 4}
layers:
  - conv: {op: conv2d, out_channels: 4, kernel: 3, padding: 1}
  - sig: {op: sigmoid}
  - plus: {op: add, scalar: 0.5}
  - inv: {op: div, scalar: 1.0, reverse: true}
  - half: {op: mul, scalar: 0.5}
  - quarter: {op: div, scalar: 4.0}
  - flip: {op: sub, scalar: 1.0, reverse: true}
  - shift: {op: sub, scalar: 0.25}
  - conv2: {op: conv2d, out_channels: 4, kernel: 1, input: conv}
  - diff: {op: sub, inputs: [shift, conv2]}
  - gate: {op: sigmoid, input: conv2}
  - den: {op: add, scalar: 0.5}
  - ratio: {op: div, inputs: [diff, den]}
  - view: {op: reshape, channels: 16, height: 2, width: 2}
  - padded: {op: pad, top: 1, left: 2, right: 1, value: 0.5}
  - conv3: {op: conv2d, out_channels: 2, kernel: 3, padding: 1}
  - gap: {op: global_avgpool}
  - flat: {op: flatten}
  - fc: {op: linear, out_features: 3}
  - out: {op: log_softmax}
)",
                            8, 72 + 4 + 16 + 4 + 288 + 2 + 6 + 3);
}

// ECA's attention (ecaresnet's `se`: a 1-D convolution over the pooled channels, a sigmoid, the
// reshape back to a channel vector, the multiply), and a strided 1-D convolution over features:
// the taps' and biases' gradients, and dx through both.
TEST(TrainingInterpreter, ChannelConv1dGradientsAreTheLossesFiniteDifference) {
  expect_finite_differences(R"(zoc: 1
input: {channels: 2, height: 4, width: 4}
layers:
  - conv: {op: conv2d, out_channels: 6, kernel: 3, padding: 1}
  - gap: {op: global_avgpool}
  - flat: {op: flatten}
  - eca: {op: channel_conv1d, kernel: 3, padding: 1}
  - gate: {op: sigmoid}
  - view: {op: reshape, channels: 6, height: 1, width: 1}
  - scaled: {op: mul, inputs: [conv, view]}
  - conv2: {op: conv2d, out_channels: 3, kernel: 1}
  - gap2: {op: global_avgpool}
  - flat2: {op: flatten}
  - eca2: {op: channel_conv1d, kernel: 2, stride: 2, padding: 1}
  - fc: {op: linear, out_features: 3}
)",
                            10, 108 + 6 + 3 + 1 + 18 + 3 + 2 + 1 + 6 + 3);
}

// Softmax inside the model, over each pixel's channels (split attention's) and over features, a
// log_softmax over channels, and a final log_softmax the loss reads through.
TEST(TrainingInterpreter, SoftmaxGradientsAreTheLossesFiniteDifference) {
  expect_finite_differences(R"(zoc: 1
input: {channels: 2, height: 4, width: 4}
layers:
  - conv: {op: conv2d, out_channels: 4, kernel: 3, padding: 1}
  - soft: {op: softmax}
  - conv2: {op: conv2d, out_channels: 3, kernel: 1}
  - lsm: {op: log_softmax}
  - gap: {op: global_avgpool}
  - flat: {op: flatten}
  - fc1: {op: linear, out_features: 5}
  - fsoft: {op: softmax}
  - fc: {op: linear, out_features: 3}
  - out: {op: log_softmax}
)",
                            8, 72 + 4 + 12 + 3 + 15 + 5 + 15 + 3);
}

// Operands from the weights file, each of distinct values: buffers stay fixed (normalization, a
// shift, a scale of the logits) and parameters train (a layer scale per channel, one per logit),
// operand_grad's arithmetic for mul.
TEST(TrainingInterpreter, OperandGradientsAreTheLossesFiniteDifference) {
  expect_finite_differences(R"(zoc: 1
input: {channels: 2, height: 4, width: 4}
layers:
  - norm: {op: sub, buffer: mean}
  - scaled: {op: div, buffer: std}
  - conv: {op: conv2d, out_channels: 3, kernel: 3, padding: 1}
  - gamma: {op: mul, parameter: blocks.gamma}
  - shift: {op: add, buffer: shift}
  - gap: {op: global_avgpool}
  - flat: {op: flatten}
  - fc: {op: linear, out_features: 4}
  - fscale: {op: mul, parameter: head.scale}
  - fbuf: {op: mul, buffer: head.buf}
)",
                            6, 54 + 3 + 3 + 12 + 4 + 4,
                            {"mean", "std", "blocks.gamma", "shift", "head.scale", "head.buf"});
}

// Parameters of the weights file as operands of every op, each way round where it has two, per
// channel (stored [C, 1, 1], [C] and [1, C, 1, 1]), per feature, and one value (timm's [1]
// LearnableAffineBlock scale and bias, and a []): operand_grad's arithmetic, v / x's on a
// sigmoid lifted away from 0.
TEST(TrainingInterpreter, ParameterOperandGradientsAreTheLossesFiniteDifference) {
  expect_finite_differences(R"(zoc: 1
input: {channels: 2, height: 4, width: 4}
layers:
  - conv: {op: conv2d, out_channels: 3, kernel: 3, padding: 1}
  - bias: {op: add, parameter: blocks.bias}
  - minus: {op: sub, parameter: blocks.shift, param_rank: 1}
  - sig: {op: sigmoid}
  - lift: {op: add, scalar: 0.5}
  - over: {op: div, parameter: blocks.div}
  - flip: {op: div, parameter: blocks.num, reverse: true, one_value: true, param_rank: 1}
  - rsub: {op: sub, parameter: blocks.from, reverse: true, param_rank: 4}
  - scale: {op: mul, parameter: affine.scale, one_value: true, param_rank: 1}
  - offset: {op: add, parameter: affine.bias, one_value: true, param_rank: 1}
  - gap: {op: global_avgpool}
  - flat: {op: flatten}
  - fc: {op: linear, out_features: 4}
  - fshift: {op: sub, parameter: head.shift}
  - fone: {op: div, parameter: head.t, param_rank: 0}
)",
                            13, 54 + 3 + 3 + 3 + 3 + 1 + 3 + 1 + 1 + 16 + 4 + 1,
                            {"blocks.bias", "blocks.shift", "blocks.div", "blocks.num",
                             "blocks.from", "affine.scale", "affine.bias", "head.shift", "head.t"});
}

// A decoder's ops (issue 37): transposed convolutions (output padding; grouped and dilated), and
// nearest and bilinear upsampling by a scale, to a size below the input, and with align_corners:
// every gradient reaches the first convolution through them.
TEST(TrainingInterpreter, DecoderGradientsAreTheLossesFiniteDifference) {
  expect_finite_differences(R"(zoc: 1
input: {channels: 2, height: 4, width: 4}
layers:
  - conv: {op: conv2d, out_channels: 3, kernel: 3, stride: 2, padding: 1}
  - tconv: {op: conv_transpose2d, out_channels: 4, kernel: 3, stride: 2, padding: 1,
            output_padding: 1}
  - up: {op: upsample_nearest, scale_h: 2, scale_w: 2}
  - down: {op: upsample_bilinear, size: [5, 7]}
  - tconv2: {op: conv_transpose2d, out_channels: 2, kernel: 2, groups: 2, dilation: 2}
  - corners: {op: upsample_bilinear, scale_h: 1.5, scale_w: 1.5, align_corners: true}
  - conv2: {op: conv2d, out_channels: 3, kernel: 3, stride: 2}
  - gap: {op: global_avgpool}
  - flat: {op: flatten}
  - fc: {op: linear, out_features: 3}
)",
                            10, 54 + 3 + 108 + 4 + 16 + 2 + 54 + 3 + 9 + 3);
}

// Leaky ReLU and ELU (issue 36) train through the activation table: their gradients, from
// zoc/math/activations.h, reach both convolutions and the classifier. (Unpadded, no
// pre-activation lies within a finite-difference step of either kink at 0.)
TEST(TrainingInterpreter, LeakyReluAndEluGradientsAreTheLossesFiniteDifference) {
  expect_finite_differences(R"(zoc: 1
input: {channels: 2, height: 4, width: 4}
layers:
  - conv: {op: conv2d, out_channels: 3, kernel: 3}
  - leaky: {op: leaky_relu, negative_slope: 0.2}
  - conv2: {op: conv2d, out_channels: 3, kernel: 1}
  - elu: {op: elu, alpha: 0.7}
  - gap: {op: global_avgpool}
  - flat: {op: flatten}
  - fc: {op: linear, out_features: 3}
)",
                            6, 54 + 3 + 9 + 3 + 9 + 3);
}

// PyTorch's SGD: d = g + wd * w; v = momentum * v + d (v from the state, else 0); w -= lr * v.
TEST(TrainingInterpreter, SgdTakesPyTorchsStep) {
  Fixture f(true);
  ref::RunOptions o;
  o.lr = 0.1f;
  o.momentum = 0.9f;
  o.weight_decay = 0.01f;
  const std::vector<float>& w = f.weights.tensors.at("fc.weight");
  std::vector<float> v0(w.size());
  for (size_t i = 0; i < v0.size(); ++i) v0[i] = 0.01f * float(i);
  o.momentum_buffers["fc.weight"] = v0;
  auto r = ref::run_training(f.graph, f.weights, f.input, f.labels, o);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->updated.size(), 7u);
  EXPECT_EQ(r->momentum_buffers.size(), 7u);
  for (const char* name : {"fc.weight", "conv.bias"}) {
    const std::vector<float>& p = f.weights.tensors.at(name);
    const std::vector<float>& g = r->grads.at(name);
    for (size_t i = 0; i < p.size(); ++i) {
      const float v_old = name == std::string("fc.weight") ? v0[i] : 0.0f;
      const float v = o.momentum * v_old + (g[i] + o.weight_decay * p[i]);
      EXPECT_EQ(r->momentum_buffers.at(name)[i], v) << name << "[" << i << "]";
      EXPECT_EQ(r->updated.at(name)[i], p[i] - o.lr * v) << name << "[" << i << "]";
    }
  }
  // The optimizer does not change the gradients.
  Fixture plain(false);
  auto g = ref::run_training(plain.graph, plain.weights, plain.input, plain.labels);
  ASSERT_TRUE(g);
  EXPECT_EQ(g->grads, r->grads);
  EXPECT_EQ(g->loss, r->loss);
}

TEST(TrainingInterpreter, InferenceRunRefusesATrainingGraph) {
  Fixture f(false);
  auto r = ref::run(f.graph, f.weights, f.input);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("is a training graph"), std::string::npos);
}

}  // namespace
}  // namespace zoc
