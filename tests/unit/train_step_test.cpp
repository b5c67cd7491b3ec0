// The reference training step (the model's training graph, passes/build_training_graph.cpp,
// without the optimizer, run by ref::run_training): its refusals, each a clear error rather than
// a crash, and two properties any correct step has. The comparison with PyTorch autograd (LeNet
// against fp32, ResNet-50 against float64) is tests/train's zoc-grad case.
#include <gtest/gtest.h>

#include <cmath>

#include "compiler/backend/reference/interpreter.h"
#include "compiler/passes/pipeline.h"
#include "tests/unit/test_util.h"

namespace {

// What `zoc grad` runs: the training graph without the optimizer, on the reference interpreter.
zoc::Expected<zoc::ref::TrainingResult> train_step(const zoc::ir::Graph& model,
                                                   const zoc::Weights& weights,
                                                   const zoc::ref::Tensor& input,
                                                   const std::vector<int32_t>& labels) {
  zoc::Diagnostics diags;
  auto training = zoc::passes::build_training_graph(model, {.optimizer = false}, diags);
  if (!training) return diags.to_error();
  return zoc::ref::run_training(*training, weights, input, labels);
}

using zoc::test::TempDir;

constexpr const char* kSmall = R"(zoc: 1
name: small
input: {channels: 2, height: 6, width: 6}
layers:
  - conv: {op: conv2d, out_channels: 3, kernel: 3, padding: 1}
  - bn: {op: batchnorm2d}
  - relu: {op: relu}
  - pool: {op: avgpool2d, kernel: 2}
  - flatten: {op: flatten}
  - fc: {op: linear, out_features: 4}
  - prob: {op: softmax}
)";

struct Fixture {
  TempDir dir;
  zoc::Diagnostics diags;
  zoc::ir::Graph graph;
  zoc::Weights weights;
  zoc::ref::Tensor input;
  Fixture() {
    auto g = zoc::load_verified_model(dir.write("small.yaml", kSmall), diags);
    EXPECT_TRUE(g) << diags.render();
    graph = *g;
    weights = zoc::init_weights(graph, 3);
    input.shape = {2, 2, 6, 6};
    for (int i = 0; i < 144; ++i) input.data.push_back(std::sin(0.37f * float(i)));
  }
};

TEST(TrainStep, LabelsMustMatchTheBatchAndTheClasses) {
  Fixture f;
  auto few = train_step(f.graph, f.weights, f.input, {1});
  ASSERT_FALSE(few);
  EXPECT_NE(few.error().message.find("1 labels for a batch of 2"), std::string::npos);
  auto big = train_step(f.graph, f.weights, f.input, {1, 4});
  ASSERT_FALSE(big);
  EXPECT_NE(big.error().message.find("label 4 of sample 1 is outside 0..3"), std::string::npos);
}

TEST(TrainStep, RefusesTheGraphAfterTheInferencePasses) {
  Fixture f;
  zoc::ir::Graph fused = f.graph;
  ASSERT_TRUE(zoc::passes::run_pipeline(fused, f.diags, {}));
  auto r = train_step(fused, f.weights, f.input, {0, 1});
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("before the inference passes"), std::string::npos);
}

TEST(TrainStep, RefusesAnInputOfAnotherShape) {
  Fixture f;
  f.input.shape = {2, 2, 6, 5};
  auto r = train_step(f.graph, f.weights, f.input, {0, 1});
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("does not match"), std::string::npos);
}

// The loss is taken on the final softmax's input; the logits' gradient rows sum to zero, so the
// last bias's gradient does; a training-mode BatchNorm's beta gradient is the sum of what
// reaches it, and its gamma has one entry per channel. And a finite-difference check of one
// weight: the loss moves by what its gradient says.
TEST(TrainStep, GradientsAgreeWithFiniteDifferences) {
  Fixture f;
  const std::vector<int32_t> labels{2, 0};
  auto r = train_step(f.graph, f.weights, f.input, labels);
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_EQ(r->logits.shape, (std::vector<int64_t>{2, 4}));
  double bias_sum = 0;
  for (float v : r->grads.at("fc.bias")) bias_sum += v;
  EXPECT_NEAR(bias_sum, 0.0, 1e-6);
  EXPECT_EQ(r->grads.at("bn.weight").size(), 3u);
  EXPECT_EQ(r->buffers.count("bn.running_var"), 1u);
  for (const char* name : {"conv.weight", "fc.weight", "bn.weight"}) {
    const float g = r->grads.at(name)[1];
    const float h = 1e-2f;
    zoc::Weights up = f.weights, down = f.weights;
    up.tensors.at(name)[1] += h;
    down.tensors.at(name)[1] -= h;
    auto lu = train_step(f.graph, up, f.input, labels);
    auto ld = train_step(f.graph, down, f.input, labels);
    ASSERT_TRUE(lu && ld);
    const double numeric = (lu->loss - ld->loss) / (2.0 * h);
    EXPECT_NEAR(numeric, g, 2e-3 + 2e-2 * std::fabs(g)) << name;
  }
}

}  // namespace
