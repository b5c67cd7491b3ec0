// The CNN zoo's ops (issue 20): each reference kernel against values worked out by hand (so the
// test does not share the kernel's arithmetic), the shape rules that the bad-input files do not
// reach (weight_2d, which only frontends set), and the model-file form of every op. Their
// gradients are checked against finite differences in training_interpreter_test.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "compiler/backend/reference/grad_kernels.h"
#include "compiler/backend/reference/interpreter.h"
#include "compiler/backend/reference/kernels.h"
#include "compiler/ir/printer.h"
#include "compiler/ir/shapes.h"
#include "compiler/passes/pipeline.h"
#include "tests/unit/test_util.h"

namespace zoc {
namespace {

void expect_floats(const std::vector<float>& got, const std::vector<double>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-6) << "[" << i << "]";
}

TEST(ZooKernels, MulSameShapeAndPerChannel) {
  const std::vector<float> a = {1, 2, 3, 4};  // [n 1, c 2, hw 2]
  std::vector<float> y(4);
  const std::vector<float> same = {2, -1, 0.5f, 3}, per_channel = {10, -1};
  ref::binary(ref::BinaryOp::kMul, {a.data(), {2, 2}, true}, {same.data(), {2, 2}, true}, y.data(),
              1, {2, 2});
  expect_floats(y, {2, -2, 1.5, 12});
  ref::binary(ref::BinaryOp::kMul, {a.data(), {2, 2}, true}, {per_channel.data(), {2, 1}, true},
              y.data(), 1, {2, 2});
  expect_floats(y, {10, 20, -3, -4});
  // Backward with dy = 1: da = b, db = a summed over each channel's pixels.
  std::vector<float> da(4), db(2);
  ref::mul_backward(a.data(), std::vector<float>{10, -1}.data(),
                    std::vector<float>{1, 1, 1, 1}.data(), da.data(), db.data(), 1, 2, 2, true);
  expect_floats(da, {10, 10, -1, -1});
  expect_floats(db, {3, 7});
}

TEST(ZooKernels, ChannelScaleAndItsGradient) {
  const std::vector<float> x = {1, 2, 3, 4, 5, 6, 7, 8};  // [n 2, c 2, hw 2]
  const std::vector<float> gamma = {2, -0.5f};
  std::vector<float> y(8), dx(8), dgamma(2);
  ref::channel_scale(x.data(), gamma.data(), y.data(), 2, 2, 2);
  expect_floats(y, {2, 4, -1.5, -2, 10, 12, -3.5, -4});
  ref::operand_backward(ref::BinaryOp::kMul, false, x.data(), gamma.data(),
                        std::vector<float>(8, 1.0f).data(), dx.data(), dgamma.data(), 2, 2, 2);
  expect_floats(dx, {2, 2, -0.5, -0.5, 2, 2, -0.5, -0.5});
  expect_floats(dgamma, {1 + 2 + 5 + 6, 3 + 4 + 7 + 8});
}

// The other operand ops' gradients, PyTorch's formulas, on [n 2, c 2, hw 2] with dy = 1 and
// v = (2, -0.5): sums per channel over samples and pixels.
TEST(ZooKernels, OperandGradients) {
  const std::vector<float> x = {1, 2, 3, 4, 5, 6, 7, 8}, v = {2, -0.5f}, dy(8, 1.0f);
  std::vector<float> dx(8), dv(2);
  ref::operand_backward(ref::BinaryOp::kAdd, false, x.data(), v.data(), dy.data(), dx.data(),
                        dv.data(), 2, 2, 2);
  expect_floats(dx, std::vector<double>(8, 1.0));
  expect_floats(dv, {4, 4});
  ref::operand_backward(ref::BinaryOp::kSub, false, x.data(), v.data(), dy.data(), dx.data(),
                        dv.data(), 2, 2, 2);
  expect_floats(dv, {-4, -4});
  ref::operand_backward(ref::BinaryOp::kSub, true, x.data(), v.data(), dy.data(), dx.data(),
                        dv.data(), 2, 2, 2);
  expect_floats(dx, std::vector<double>(8, -1.0));
  expect_floats(dv, {4, 4});
  ref::operand_backward(ref::BinaryOp::kDiv, false, x.data(), v.data(), dy.data(), dx.data(),
                        dv.data(), 2, 2, 2);
  expect_floats(dx, {0.5, 0.5, -2, -2, 0.5, 0.5, -2, -2});
  expect_floats(dv, {-14.0 / 4, -22.0 / 0.25});  // -sum(x) / v^2
  std::vector<float> dx1(4);                     // one sample
  ref::operand_backward(ref::BinaryOp::kDiv, true, x.data(), v.data(), dy.data(), dx1.data(),
                        dv.data(), 1, 2, 2);  // v / x: dx = -v / x^2, dv = sum 1 / x
  expect_floats(dx1, {-2.0, -0.5, 0.5 / 9, 0.5 / 16});
  expect_floats(dv, {1.5, 1.0 / 3 + 0.25});
}

// Two pixels of three channels: (1, 2, 3) has mean 2 and variance 2/3, (0, -3, 3) mean 0 and
// variance 6; normalized, (-sqrt(1.5), 0, sqrt(1.5)) and (0, -sqrt(1.5), sqrt(1.5)).
TEST(ZooKernels, LayerNormOverTheChannelsOfEachPixel) {
  const std::vector<float> x = {1, 0, 2, -3, 3, 3};  // [n 1, c 3, hw 2], channel-major
  const std::vector<float> w = {1, 2, 3}, b = {0, 1, -1};
  const double r = std::sqrt(1.5);
  std::vector<float> y(6);
  ref::layernorm(x.data(), y.data(), 1, 3, 2, w.data(), b.data(), 0.0);
  expect_floats(y, {-r, 0, 1, 1 - 2 * r, -1 + 3 * r, -1 + 3 * r});
  // Features (hw = 1): the same rule over F.
  ref::layernorm(std::vector<float>{1, 2, 3}.data(), y.data(), 1, 3, 1, w.data(), b.data(), 0.0);
  expect_floats(std::vector<float>(y.begin(), y.begin() + 3), {-r, 1, -1 + 3 * r});
  // eps inside the sqrt: a constant pixel normalizes to 0, so y is the bias.
  ref::layernorm(std::vector<float>{5, 5, 5}.data(), y.data(), 1, 3, 1, w.data(), b.data(), 1e-5);
  expect_floats(std::vector<float>(y.begin(), y.begin() + 3), {0, 1, -1});
  // The bias gradient sums dy; with dy = 1 and weight 1 the input gradient vanishes (the
  // normalized output does not change when x moves along its own mean or scale).
  std::vector<float> dx(6), dw(3), db(3);
  ref::layernorm_backward(x.data(), std::vector<float>(6, 1.0f).data(),
                          std::vector<float>{1, 1, 1}.data(), 1, 3, 2, 0.0, dx.data(), dw.data(),
                          db.data());
  expect_floats(dx, {0, 0, 0, 0, 0, 0});
  expect_floats(db, {2, 2, 2});
  expect_floats(dw, {-r, 0 - r, r + r});
}

TEST(ZooKernels, ChannelShuffleIsTorchvisionsAndItsInverseShufflesByCOverG) {
  const std::vector<float> x = {0, 1, 2, 3, 4, 5};  // [n 1, c 6, hw 1]
  std::vector<float> y(6), back(6);
  ref::channel_shuffle(x.data(), y.data(), 1, 6, 1, 2);  // view(1, 2, 3).transpose(1, 2)
  expect_floats(y, {0, 3, 1, 4, 2, 5});
  ref::channel_shuffle(x.data(), y.data(), 1, 6, 1, 3);
  expect_floats(y, {0, 2, 4, 1, 3, 5});
  ref::channel_shuffle(y.data(), back.data(), 1, 6, 1, 2);
  expect_floats(back, {0, 1, 2, 3, 4, 5});
}

TEST(ZooKernels, CopyChannelsSlicesAndPads) {
  const std::vector<float> x = {1, 2, 3, 4, 5, 6, 7, 8};  // [n 2, c 2, hw 2]
  std::vector<float> piece(4), padded(12, 0.0f);
  ref::copy_channels(x.data(), piece.data(), {2, 2, 2, 1, 1, 0, 1});  // channel 1 of each sample
  expect_floats(piece, {3, 4, 7, 8});
  ref::copy_channels(piece.data(), padded.data(), {2, 2, 1, 0, 3, 2, 1});  // into channel 2 of 3
  expect_floats(padded, {0, 0, 0, 0, 3, 4, 0, 0, 0, 0, 7, 8});
}

// x[r][c] = 10 r + c + 1 over 2 x 5, pooled to 3 x 3. Rows: bins {0}, {0, 1}, {1} (an output
// larger than the input repeats rows); columns: {0, 1}, {1, 2, 3}, {3, 4} (bins overlap). A bin's
// mean is its rows' mean plus its columns' mean.
TEST(ZooKernels, AdaptiveAvgPoolUsesPyTorchsBins) {
  std::vector<float> x;
  for (int r = 0; r < 2; ++r) {
    for (int c = 0; c < 5; ++c) x.push_back(float(10 * r + c + 1));
  }
  std::vector<float> y(9);
  ref::adaptive_avgpool2d(x.data(), y.data(), {1, 2, 5, 3, 3});
  expect_floats(y, {1.5, 3, 4.5, 6.5, 8, 9.5, 11.5, 13, 14.5});
  // Backward along one axis (5 -> 3, dy = 1): each input row gets 1/|bin| from every bin
  // holding it.
  std::vector<float> dx(5);
  ref::adaptive_avgpool2d_backward(std::vector<float>{1, 1, 1}.data(), dx.data(), {1, 5, 1, 3, 1});
  expect_floats(dx, {0.5, 0.5 + 1.0 / 3, 1.0 / 3, 1.0 / 3 + 0.5, 0.5});
}

constexpr const char* kZooModel = R"(zoc: 1
name: zoo_model
input: {channels: 4, height: 6, width: 6}
layers:
  - conv: {op: conv2d, out_channels: 8, kernel: 3, padding: 1}
  - ln: {op: layernorm, eps: 1e-6}
  - ls: {op: layer_scale}
  - gap: {op: global_avgpool}
  - se: {op: conv2d, out_channels: 8, kernel: 1}
  - gate: {op: hardsigmoid}
  - scaled: {op: mul, inputs: [ls, gate]}
  - shuffle: {op: channel_shuffle, groups: 2}
  - a: {op: slice_channels, start: 0, count: 3}
  - b: {op: slice_channels, start: 3, count: 5, input: shuffle}
  - cat: {op: concat, inputs: [b, a]}
  - pool: {op: adaptive_avgpool2d, output_size: [4, 7]}
  - flat: {op: flatten}
  - lnf: {op: layernorm}
  - fc: {op: linear, out_features: 3}
)";

TEST(ZooOps, ModelFilesUseThemWithTypesAndParameters) {
  test::TempDir dir;
  Diagnostics d;
  auto g = test::load(dir.write("m.yaml", kZooModel), d);
  ASSERT_TRUE(g) << d.render();
  const std::string ir = ir::print_graph(*g, {.locations = false});
  for (const char* line : {
           "%ln = layernorm(%conv) {eps=1e-06} : Nx8x6x6 f32",
           "param  ln.weight [8]",
           "%ls = layer_scale(%ln) : Nx8x6x6 f32",
           "param  ls.layer_scale [8x1x1]",
           "%scaled = mul(%ls, %gate) : Nx8x6x6 f32",
           "%shuffle = channel_shuffle(%scaled) {groups=2} : Nx8x6x6 f32",
           "%b = slice_channels(%shuffle) {start=3, count=5} : Nx5x6x6 f32",
           "%pool = adaptive_avgpool2d(%cat) {output_size=4x7} : Nx8x4x7 f32",
           "%lnf = layernorm(%flat) {eps=1e-05} : Nx224 f32",
       }) {
    EXPECT_NE(ir.find(line), std::string::npos) << line << "\n" << ir;
  }
  // The inference passes keep every zoo op, and the interpreter gives the same numbers before
  // and after them.
  ir::Graph optimized = *g;
  ASSERT_TRUE(passes::run_pipeline(optimized, d)) << d.render();
  const Weights w = init_weights(*g, 3);
  ref::Tensor x{{2, 4, 6, 6}, {}};
  for (int i = 0; i < 288; ++i) x.data.push_back(std::cos(0.37f * float(i)));
  auto before = ref::run(*g, w, x);
  auto after = ref::run(optimized, w, x);
  ASSERT_TRUE(before && after);
  EXPECT_EQ((*before)[0].data, (*after)[0].data);
}

// A linear layer over the channels (weight_2d, set by the TorchScript frontend for ConvNeXt):
// the weight is declared [O, C], computes what the [O, C, 1, 1] convolution does, and survives
// the inference passes (which copy attributes).
TEST(ZooOps, Weight2dConvolutionKeepsTheLinearsShape) {
  test::TempDir dir;
  Diagnostics d;
  auto g = test::load(dir.write("m.yaml", R"(zoc: 1
input: {channels: 3, height: 4, width: 4}
layers:
  - pw: {op: conv2d, out_channels: 5, kernel: 1}
  - bn: {op: batchnorm2d}
  - relu: {op: relu}
  - flat: {op: flatten}
)"),
                      d);
  ASSERT_TRUE(g) << d.render();
  ir::Graph flat = *g;
  flat.nodes[1].attrs.set("weight_2d", ir::AttrValue{ir::AttrKind::Bool, 1, {}, 0});
  ASSERT_TRUE(ir::infer_shapes(flat, d)) << d.render();
  EXPECT_EQ(flat.nodes[1].params[0].shape, (std::vector<int64_t>{5, 3}));
  const Weights w = init_weights(*g, 7);  // the same bytes serve [5, 3, 1, 1] and [5, 3]
  ref::Tensor x{{1, 3, 4, 4}, {}};
  for (int i = 0; i < 48; ++i) x.data.push_back(std::sin(0.7f * float(i)));
  auto want = ref::run(*g, w, x);
  auto got = ref::run(flat, w, x);
  ASSERT_TRUE(want && got);
  EXPECT_EQ((*want)[0].data, (*got)[0].data);
  ASSERT_TRUE(passes::run_pipeline(flat, d)) << d.render();
  const std::string ir = ir::print_graph(flat, {.locations = false});
  EXPECT_NE(ir.find("weight_2d=true"), std::string::npos) << ir;
  auto optimized = ref::run(flat, w, x);  // BatchNorm folded: equal up to rounding
  ASSERT_TRUE(optimized);
  const std::vector<float>&a = (*want)[0].data, &b = (*optimized)[0].data;
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-6) << i;

  ir::Graph wide = *g;  // only a 1x1, ungrouped convolution is a linear layer
  wide.nodes[1].attrs.set("kernel", ir::AttrValue{ir::AttrKind::Pair, 0, {3, 3}, 0});
  wide.nodes[1].attrs.set("weight_2d", ir::AttrValue{ir::AttrKind::Bool, 1, {}, 0});
  Diagnostics errors;
  EXPECT_FALSE(ir::infer_shapes(wide, errors));
  EXPECT_NE(errors.render().find("layer 'pw' (conv2d): an [out, in] weight (weight_2d) needs a "
                                 "1x1 kernel and groups 1, not kernel 3x3 and groups 1"),
            std::string::npos)
      << errors.render();
}

}  // namespace
}  // namespace zoc
