// The dense-prediction ops of issue 37: each reference kernel against values worked out by hand
// (tests/numeric/ops_vs_pytorch_test.cpp compares whole models with PyTorch), the shape rules'
// sizes, and the refusals of what is not built yet: training (no gradient rule) and the cuDNN
// backend (its lowering, compiler/lower/choose_layers.cpp). The shape rules' errors are
// bad-input files (tests/bad_inputs/shapes/upsample_*, conv_transpose_*, argmax_*).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "compiler/backend/reference/interpreter.h"
#include "compiler/backend/reference/kernels.h"
#include "compiler/driver/run_outputs.h"
#include "compiler/ir/verify.h"
#include "compiler/passes/pipeline.h"
#include "compiler/weights/weights.h"
#include "tests/unit/op_test_util.h"

namespace zoc {
namespace {

void expect_floats(const std::vector<float>& got, const std::vector<double>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-6) << "[" << i << "]";
}

using test::load_layers;

// Five rows to eleven: by size the scale is 5/11 (floor(i * 0.4545)); by the factor 2.3 that
// gives the same 11 rows it is 1 / 2.3 (floor(i * 0.4348)). Row 9 tells them apart.
TEST(DenseKernels, NearestIndexDependsOnSizeOrScale) {
  std::vector<float> x = {0, 1, 2, 3, 4};  // [planes 1, h 5, w 1]
  std::vector<float> y(11);
  ref::upsample_nearest(x.data(), y.data(), {1, 5, 1, 11, 1, 0, 0, false, false});
  expect_floats(y, {0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4});
  ref::upsample_nearest(x.data(), y.data(), {1, 5, 1, 11, 1, 2.3, 1, false, false});
  expect_floats(y, {0, 0, 0, 1, 1, 2, 2, 3, 3, 3, 4});
  // Twice the size by the factor 2.05 (out = 2 * in): PyTorch's NCHW kernel floors
  // i / 2.05 (row 10 reads 4); its channels-last one, which a one-channel tensor takes, reads
  // i >> 1 (5).
  std::vector<float> x10(10), y20(20);
  for (int i = 0; i < 10; ++i) x10[i] = float(i);
  ref::upsample_nearest(x10.data(), y20.data(), {1, 10, 1, 20, 1, 2.05, 1, false, false});
  EXPECT_EQ(y20[9], 4);
  EXPECT_EQ(y20[10], 4);
  EXPECT_EQ(y20[19], 9);
  ref::upsample_nearest(x10.data(), y20.data(), {1, 10, 1, 20, 1, 2.05, 1, false, true});
  EXPECT_EQ(y20[9], 4);
  EXPECT_EQ(y20[10], 5);
  EXPECT_EQ(y20[19], 9);
}

// Two columns to four: align_corners false samples at (j + 0.5) / 2 - 0.5 = -0.25 (clamped to
// 0), 0.25, 0.75, 1.25 (the last pixel twice); align_corners true at j / 3.
TEST(DenseKernels, BilinearWeights) {
  std::vector<float> x = {10, 20};  // [1, h 1, w 2]
  std::vector<float> y(4);
  ref::upsample_bilinear(x.data(), y.data(), {1, 1, 2, 1, 4, 0, 0, false, false});
  expect_floats(y, {10, 12.5, 17.5, 20});
  ref::upsample_bilinear(x.data(), y.data(), {1, 1, 2, 1, 4, 0, 0, true, false});
  expect_floats(y, {10, 10 + 10.0 / 3, 10 + 20.0 / 3, 20});
}

// One input pixel spreads the kernel over the output at stride 2; two adjacent ones overlap.
TEST(DenseKernels, TransposedConvScattersTheKernel) {
  // x [n 1, c 1, h 1, w 2] = (1, 2); w [1, 1, 1, 3] = (1, 10, 100); stride 2: out width
  // (2 - 1) * 2 + 3 = 5; bias 0.5.
  const std::vector<float> x = {1, 2}, w = {1, 10, 100}, b = {0.5f};
  std::vector<float> y(5);
  ref::conv_transpose2d(x.data(), w.data(), b.data(), y.data(),
                        {1, 1, 1, 2, 1, 1, 3, 1, 2, 0, 0, 1, 1, 1, 1, 5});
  expect_floats(y, {1.5, 10.5, 100.5 + 2, 20.5, 200.5});
  // Padding 1 crops one column on each side, output_padding 1 adds one on the right.
  std::vector<float> cropped(4);
  ref::conv_transpose2d(x.data(), w.data(), b.data(), cropped.data(),
                        {1, 1, 1, 2, 1, 1, 3, 1, 2, 0, 1, 1, 1, 1, 1, 4});
  expect_floats(cropped, {10.5, 102.5, 20.5, 200.5});
}

TEST(DenseKernels, ArgmaxTakesTheFirstMaximumAndNaN) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  // [n 1, c 3, hw 4], channel-major: pixel 0 ties (first wins), pixel 1 a NaN in channel 1,
  // pixel 2 NaN in channels 0 and 2 (the first), pixel 3 the largest last.
  const std::vector<float> x = {5, 1, nan, 0, 5, nan, 2, 1, 1, 3, nan, 7};
  std::vector<float> y(4);
  ref::argmax_dim1(x.data(), y.data(), 1, 3, 4);
  expect_floats(y, {0, 1, 0, 2});
}

TEST(DenseKernels, SoftmaxAndLogSoftmaxOverChannels) {
  const std::vector<float> x = {0, 1, std::log(3.0f), 1};  // [n 1, c 2, hw 2]
  std::vector<float> y(4), ly(4);
  ref::softmax_dim1(x.data(), y.data(), 1, 2, 2, false);
  expect_floats(y, {0.25, 0.5, 0.75, 0.5});
  ref::softmax_dim1(x.data(), ly.data(), 1, 2, 2, true);
  expect_floats(ly, {std::log(0.25), std::log(0.5), std::log(0.75), std::log(0.5)});
}

TEST(DenseShapes, UpsamplingAndTransposedConvolutionSizes) {
  test::TempDir dir;
  Diagnostics d;
  auto g =
      load_layers(dir,
                  "  - a: {op: upsample_nearest, scale_h: 2.5, scale_w: 1.7}\n"
                  "  - b: {op: upsample_bilinear, size: [3, 40], align_corners: true}\n"
                  "  - c: {op: conv_transpose2d, out_channels: 4, kernel: [3, 2], stride: [2, 3],"
                  " padding: [1, 0], output_padding: [1, 2], dilation: [2, 1], groups: 2}\n"
                  "  - d: {op: argmax}\n",
                  d);
  ASSERT_TRUE(g) << d.render();
  // 5 * 2.5 = 12.5 -> 12, 7 * 1.7 = 11.9 -> 11 (PyTorch truncates).
  EXPECT_EQ(g->type(g->find_node("a")->output).dims, (std::vector<int64_t>{2, 12, 11}));
  EXPECT_EQ(g->type(g->find_node("b")->output).dims, (std::vector<int64_t>{2, 3, 40}));
  // (3 - 1) * 2 - 2 + 2 * 2 + 1 + 1 = 8; (40 - 1) * 3 - 0 + 1 + 2 + 1 = 121.
  EXPECT_EQ(g->type(g->find_node("c")->output).dims, (std::vector<int64_t>{4, 8, 121}));
  const ir::Node* c = g->find_node("c");
  ASSERT_EQ(c->params.size(), 2u);
  EXPECT_EQ(c->params[0].name, "c.weight");
  EXPECT_EQ(c->params[0].shape, (std::vector<int64_t>{2, 2, 3, 2}));  // [C_in, C_out / g, kh, kw]
  EXPECT_EQ(g->type(g->find_node("d")->output),
            (ir::TensorType{ir::DType::I64, ir::Layout::NC, {8, 121}}));
}

// Upsampling, transposed convolutions and the softmaxes over channels train; the final argmax is
// left out, as is the log_softmax under it, so the loss would read a per-pixel class map, which
// training refuses at the model's last layer (no per-pixel loss yet). The cuDNN backend runs all
// five, the argmax as the model's output (its class map).
TEST(DenseRefusals, TrainingAndTheCudnnBackend) {
  test::TempDir dir;
  Diagnostics d;
  auto g = load_layers(dir,
                       "  - up: {op: upsample_bilinear, size: [10, 14]}\n"
                       "  - tconv: {op: conv_transpose2d, out_channels: 3, kernel: 2, stride: 2}\n"
                       "  - sm: {op: softmax}\n"
                       "  - lsm: {op: log_softmax}\n"
                       "  - cls: {op: argmax}\n",
                       d);
  ASSERT_TRUE(g) << d.render();
  test::expect_refusals(*g,
                        {"m.yaml:8:5: error: layer 'cls' (argmax): training needs [classes] logits "
                         "as the model's output (or a final softmax's, log_softmax's or argmax's "
                         "input), not Nx3x20x28 f32: a loss over each pixel's class "
                         "(segmentation) is not built yet"},
                        false);
  Diagnostics backend;
  EXPECT_TRUE(test::lowers_for_cudnn(*g, backend)) << backend.render();
}

// fold-batchnorm folds a BN only into a fused_conv2d: a BN after a transposed convolution stays
// (folding it into the weight's dim 0 would scale the input channels, not the output ones),
// and the graph computes the same function after the passes.
TEST(DensePasses, BatchNormAfterTransposedConvIsNotFolded) {
  test::TempDir dir;
  Diagnostics d;
  auto g = load_layers(dir,
                       "  - tconv: {op: conv_transpose2d, out_channels: 3, kernel: 3, stride: 2}\n"
                       "  - bn: {op: batchnorm2d}\n"
                       "  - relu: {op: relu}\n"
                       "  - up: {op: upsample_nearest, scale_h: 2, scale_w: 2}\n",
                       d);
  ASSERT_TRUE(g) << d.render();
  Weights w = init_weights(*g, 5);
  for (float& v : w.tensors["bn.running_mean"]) v = 0.3f;
  for (float& v : w.tensors["bn.running_var"]) v = 2.5f;
  for (float& v : w.tensors["bn.weight"]) v = -1.5f;
  const ir::Graph after = test::optimize_keeping_function(*g, w, test::wave_input(*g, 2), 0);
  ASSERT_NE(after.find_node("bn"), nullptr);
  EXPECT_EQ(after.find_node("bn")->op, ir::OpKind::BatchNorm2d);
  EXPECT_EQ(after.find_node("tconv")->op, ir::OpKind::ConvTranspose2d);
}

// A segmentation model's outputs, in the order `output:` lists them; each written to its own file
// by `zoc run --output`, named after its layer; a graph may not list one value twice.
TEST(SeveralOutputs, OrderFilesAndVerifier) {
  test::TempDir dir;
  Diagnostics d;
  const std::string path = dir.write("m.yaml", R"(zoc: 1
input: {channels: 3, height: 6, width: 5}
layers:
  - conv: {op: conv2d, out_channels: 4, kernel: 3, padding: 1}
  - aux.head: {layers: [{c: {op: conv2d, out_channels: 2, kernel: 1}}], input: conv}
  - out: {op: upsample_bilinear, scale_h: 2, scale_w: 2, input: conv}
output: [out, aux.head]
)");
  auto g = test::load(path, d);
  ASSERT_FALSE(g) << "'aux.head' is not a layer name";
  d = Diagnostics{};
  g = test::load(dir.write("m.yaml", R"(zoc: 1
input: {channels: 3, height: 6, width: 5}
layers:
  - conv: {op: conv2d, out_channels: 4, kernel: 3, padding: 1}
  - aux: {layers: [{c: {op: conv2d, out_channels: 2, kernel: 1}}], input: conv}
  - out: {op: upsample_bilinear, scale_h: 2, scale_w: 2, input: conv}
output: [out, aux]
)"),
                 d);
  ASSERT_TRUE(g) << d.render();
  ASSERT_EQ(g->outputs.size(), 2u);
  EXPECT_EQ(g->value_name(g->outputs[0]), "out");
  EXPECT_EQ(g->value_name(g->outputs[1]), "aux.c");
  auto files = output_files(*g, "/tmp/y.npy");
  ASSERT_TRUE(files.ok()) << files.error().message;
  EXPECT_EQ(*files, (std::vector<std::string>{"/tmp/y_out.npy", "/tmp/y_aux.c.npy"}));
  // Names from other frontends may hold anything; two that sanitize alike are an error.
  g->nodes[g->values[g->outputs[0]].producer].name = "a/b";
  g->nodes[g->values[g->outputs[1]].producer].name = "a:b";
  auto clash = output_files(*g, "y");
  ASSERT_FALSE(clash.ok());
  EXPECT_EQ(clash.error().message, "outputs 'a/b' and 'a:b' would both be written to y_a_b.npy");
  ir::Graph one = *g;
  one.outputs = {one.outputs[0]};
  EXPECT_EQ(*output_files(one, "y.npy"), std::vector<std::string>{"y.npy"});
  g->outputs.push_back(g->outputs[0]);
  Diagnostics v;
  EXPECT_FALSE(ir::verify(*g, v));
  EXPECT_NE(v.render().find("output %a/b is listed twice"), std::string::npos) << v.render();
}

}  // namespace
}  // namespace zoc
