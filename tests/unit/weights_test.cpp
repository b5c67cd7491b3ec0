// Tests of weight initialization, saving and loading against a graph, and of the reference
// interpreter on the shipped models with those weights.
#include <gtest/gtest.h>

#include <cmath>

#include "compiler/backend/reference/interpreter.h"
#include "compiler/weights/weights.h"
#include "tests/unit/test_util.h"

namespace zoc {
namespace {

using test::repo_path;

ir::Graph lenet() {
  Diagnostics d;
  auto g = test::load(repo_path("models/lenet.yaml"), d);
  EXPECT_TRUE(g) << d.render();
  return *g;
}

TEST(InitWeights, FollowsPyTorchDefaults) {
  Diagnostics d;
  auto g = test::load(repo_path("models/resnet18.yaml"), d);
  ASSERT_TRUE(g);
  const Weights w = init_weights(*g, 7);
  // Conv2d: U(-1/sqrt(fan_in), 1/sqrt(fan_in)); conv1 fan_in = 3*7*7 = 147.
  const std::vector<float>& c1 = *w.find("conv1.weight");
  ASSERT_EQ(c1.size(), 64u * 147u);
  const double bound = 1.0 / std::sqrt(147.0);
  double sum = 0, sq = 0, maxabs = 0;
  for (float v : c1) {
    sum += v;
    sq += double(v) * v;
    maxabs = std::max(maxabs, double(std::abs(v)));
  }
  EXPECT_LE(maxabs, bound);
  EXPECT_GT(maxabs, 0.95 * bound);
  EXPECT_NEAR(sum / c1.size(), 0.0, 0.05 * bound);
  EXPECT_NEAR(sq / c1.size(), bound * bound / 3.0, 0.1 * bound * bound / 3.0);  // var of U(-b,b)
  // BatchNorm: weight 1, bias 0, running_mean 0, running_var 1.
  for (float v : *w.find("layer1.0.bn1.weight")) EXPECT_EQ(v, 1.0f);
  for (float v : *w.find("layer1.0.bn1.bias")) EXPECT_EQ(v, 0.0f);
  for (float v : *w.find("layer1.0.bn1.running_var")) EXPECT_EQ(v, 1.0f);
  // Linear bias: U(-1/sqrt(512), 1/sqrt(512)).
  for (float v : *w.find("fc.bias")) EXPECT_LE(std::abs(v), 1.0 / std::sqrt(512.0));
  // Deterministic per seed, different across seeds.
  EXPECT_EQ(*init_weights(*g, 7).find("fc.weight"), *w.find("fc.weight"));
  EXPECT_NE(*init_weights(*g, 8).find("fc.weight"), *w.find("fc.weight"));
}

TEST(Weights, SaveThenLoadRoundTrips) {
  const ir::Graph g = lenet();
  const Weights w = init_weights(g, 1);
  test::TempDir dir;
  ASSERT_TRUE(save_weights(g, w, dir.file("w.safetensors")).ok());
  Diagnostics d;
  auto back = load_weights(g, dir.file("w.safetensors"), d);
  ASSERT_TRUE(back) << d.render();
  EXPECT_EQ(back->tensors, w.tensors);
}

TEST(Weights, ResNetFileWithBuffersLoads) {
  Diagnostics d;
  auto g = test::load(repo_path("models/resnet18.yaml"), d, {{"num_classes", "10"}});
  ASSERT_TRUE(g);
  test::TempDir dir;
  ASSERT_TRUE(save_weights(*g, init_weights(*g, 3), dir.file("w.safetensors")).ok());
  auto back = load_weights(*g, dir.file("w.safetensors"), d);
  ASSERT_TRUE(back) << d.render();
  // num_batches_tracked is validated but not kept.
  EXPECT_EQ(back->find("bn1.num_batches_tracked"), nullptr);
  EXPECT_NE(back->find("bn1.running_mean"), nullptr);
}

TEST(Weights, FileForAnotherModelIsRejectedWithEveryMismatch) {
  const ir::Graph g = lenet();
  Diagnostics d;
  auto other = test::load(repo_path("models/lenet.yaml"), d, {{"num_classes", "7"}});
  ASSERT_TRUE(other);
  test::TempDir dir;
  ASSERT_TRUE(save_weights(*other, init_weights(*other, 1), dir.file("w.safetensors")).ok());
  Diagnostics d2;
  EXPECT_FALSE(load_weights(g, dir.file("w.safetensors"), d2));
  const std::string text = d2.render();
  EXPECT_NE(text.find("tensor 'fc2.weight' has shape [7, 1024], but layer 'fc2' (linear) "
                      "expects [10, 1024]"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("tensor 'fc2.bias' has shape [7]"), std::string::npos) << text;
}

TEST(Interpreter, RunsLeNetAndRejectsWrongInput) {
  const ir::Graph g = lenet();
  const Weights w = init_weights(g, 2);
  ref::Tensor x{{3, 1, 28, 28}, std::vector<float>(3 * 28 * 28)};
  for (size_t i = 0; i < x.data.size(); ++i) x.data[i] = std::sin(0.37f * float(i));
  auto out = ref::run(g, w, x);
  ASSERT_TRUE(out.ok()) << out.error().message;
  ASSERT_EQ(out->size(), 1u);
  EXPECT_EQ((*out)[0].shape, (std::vector<int64_t>{3, 10}));
  for (float v : (*out)[0].data) EXPECT_TRUE(std::isfinite(v));
  // Different samples give different logits.
  EXPECT_NE((*out)[0].data[0], (*out)[0].data[10]);

  ref::Tensor bad{{1, 3, 28, 28}, std::vector<float>(3 * 28 * 28, 0.5f)};
  auto err = ref::run(g, w, bad);
  ASSERT_FALSE(err.ok());
  EXPECT_EQ(err.error().message, "input has shape 1x3x28x28, but model 'lenet' expects Nx1x28x28");

  Weights missing = w;
  missing.tensors.erase("conv2.weight");
  auto err2 = ref::run(g, missing, x);
  ASSERT_FALSE(err2.ok());
  EXPECT_NE(err2.error().message.find("layer 'conv2' (conv2d): no weights for 'conv2.weight'"),
            std::string::npos);
}

}  // namespace
}  // namespace zoc
