// The ONNX forms of the CNN zoo (compiler/frontend/onnx/ops_zoo.cpp, ops_decomposed.cpp,
// ops_shape.cpp) on small models built here, each written as torch.onnx.export writes it: what
// IR it becomes and that the interpreter computes the ONNX semantics on it. The whole exported
// models are tested in tests/zoo/ (against PyTorch and the TorchScript route's IR), and every
// refusal in tests/bad_inputs/onnx/.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "compiler/backend/reference/interpreter.h"
#include "compiler/ir/printer.h"
#include "tests/unit/onnx_builder.h"
#include "tests/unit/test_util.h"

namespace zoc {
namespace {

using namespace test::onnx_builder;  // NOLINT: the builder's vocabulary

void expect_near(const std::vector<float>& got, const std::vector<float>& want, double tol = 1e-6) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << i;
}

// x [2, 2, 2, 2] with values on both sides of 0 and beyond +-3.
ref::Tensor image(int64_t c = 2, int64_t h = 2, int64_t w = 2) {
  ref::Tensor x{{2, c, h, w}, {}};
  for (int64_t i = 0; i < 2 * c * h * w; ++i)
    x.data.push_back(0.75f * static_cast<float>(i % 11) - 4.f);
  return x;
}

template <class F>
std::vector<float> map(const std::vector<float>& v, F f) {
  std::vector<float> out;
  for (float x : v) out.push_back(static_cast<float>(f(double(x))));
  return out;
}

TEST(OnnxZoo, SigmoidTimesItsInputIsSiluUnlessTheGateIsReadAgain) {
  Builder b;
  b.input("x", {-1, 2, 2, 2}).output("y", 4);
  b.node("Sigmoid", {"x"}, {"s"}, "/act/Sigmoid");
  b.node("Mul", {"x", "s"}, {"y"}, "/act/Mul");
  const ref::Tensor x = image();
  expect_near(run_model(b, "input silu", x),
              map(x.data, [](double v) { return v / (1 + std::exp(-v)); }));
  Builder twice;  // x * s + s: s is the sigmoid, which stays
  twice.input("x", {-1, 2, 2, 2}).output("y", 4);
  twice.node("Sigmoid", {"x"}, {"s"}, "/act/Sigmoid");
  twice.node("Identity", {"s"}, {"s2"}, "/act/Identity");
  twice.node("Mul", {"x", "s2"}, {"m"}, "/act/Mul");
  twice.node("Add", {"m", "s"}, {"y"}, "/act/Add");
  expect_near(run_model(twice, "input sigmoid mul add", x), map(x.data, [](double v) {
                const double s = 1 / (1 + std::exp(-v));
                return v * s + s;
              }));
}

// Opset 13 has no HardSwish: torch.onnx.export writes x * HardSigmoid(x, alpha=1/6).
TEST(OnnxZoo, HardSigmoidTimesItsInputIsHardswishBelowOpset14) {
  Builder b(13);
  b.input("x", {-1, 2, 2, 2}).output("y", 4);
  set_float(b.node("HardSigmoid", {"x"}, {"h"}, "/act/HardSigmoid"), "alpha", 1.0f / 6.0f);
  b.node("Mul", {"x", "h"}, {"y"}, "/act/Mul");
  const ref::Tensor x = image();
  expect_near(run_model(b, "input hardswish", x),
              map(x.data, [](double v) { return v * std::clamp(v + 3, 0.0, 6.0) / 6; }));
}

// GELU as torch 1.13 writes it: x * (1 + erf(x / sqrt(2))) * 0.5, the operands of the Muls and
// the Add in the exporter's order and swapped.
TEST(OnnxZoo, GeluErfFormIsOneGelu) {
  for (bool swapped : {false, true}) {
    Builder b;
    b.input("x", {-1, 2, 2, 2}).output("y", 4);
    b.init("sqrt2", {}, {static_cast<float>(std::sqrt(2.0))})
        .init("one", {}, {1})
        .init("half", {}, {0.5f});
    b.node("Div", {"x", "sqrt2"}, {"d"}, "/gelu/Div");
    b.node("Erf", {"d"}, {"e"}, "/gelu/Erf");
    b.node("Add",
           swapped ? std::vector<std::string>{"one", "e"} : std::vector<std::string>{"e", "one"},
           {"a"}, "/gelu/Add");
    b.node("Mul", swapped ? std::vector<std::string>{"a", "x"} : std::vector<std::string>{"x", "a"},
           {"m"}, "/gelu/Mul");
    b.node("Mul",
           swapped ? std::vector<std::string>{"half", "m"} : std::vector<std::string>{"m", "half"},
           {"y"}, "/gelu/Mul_1");
    const ref::Tensor x = image();
    expect_near(run_model(b, "input gelu", x),
                map(x.data, [](double v) { return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))); }),
                1e-5);
  }
}

// ConvNeXt's LayerNorm2d: Transpose to channels-last, LayerNormalization (opset 17) or its
// decomposition (opset 13), Transpose back; both give one layernorm over the channels.
Builder layer_norm_model(bool decomposed) {
  Builder b(decomposed ? 13 : 17);
  b.input("x", {-1, 3, 2, 2}).output("y", 4);
  b.init("norm.weight", {3}, {1.5f, 0.5f, -1}).init("norm.bias", {3}, {0.1f, 0, -0.2f});
  set_ints(b.node("Transpose", {"x"}, {"t"}, "/norm/Transpose"), "perm", {0, 2, 3, 1});
  if (!decomposed) {
    set_float(b.node("LayerNormalization", {"t", "norm.weight", "norm.bias"}, {"n"},
                     "/norm/LayerNormalization"),
              "epsilon", 1e-6f);
  } else {
    b.init("two", {}, {2}).init("eps", {}, {1e-6f});
    set_ints(b.node("ReduceMean", {"t"}, {"m"}, "/norm/ReduceMean"), "axes", {-1});
    b.node("Sub", {"t", "m"}, {"d"}, "/norm/Sub");
    b.node("Pow", {"d", "two"}, {"p"}, "/norm/Pow");
    set_ints(b.node("ReduceMean", {"p"}, {"v"}, "/norm/ReduceMean_1"), "axes", {-1});
    b.node("Add", {"v", "eps"}, {"ve"}, "/norm/Add");
    b.node("Sqrt", {"ve"}, {"s"}, "/norm/Sqrt");
    b.node("Div", {"d", "s"}, {"q"}, "/norm/Div");
    b.node("Mul", {"q", "norm.weight"}, {"qw"}, "/norm/Mul");
    b.node("Add", {"qw", "norm.bias"}, {"n"}, "/norm/Add_1");
  }
  set_ints(b.node("Transpose", {"n"}, {"y"}, "/norm/Transpose_1"), "perm", {0, 3, 1, 2});
  return b;
}

TEST(OnnxZoo, LayerNormDecompositionIsLayerNormalization) {
  const ref::Tensor x = image(3, 2, 2);
  std::vector<float> want(x.data.size());
  const float w[] = {1.5f, 0.5f, -1}, bias[] = {0.1f, 0, -0.2f};
  for (size_t n = 0; n < 2; ++n) {
    for (size_t p = 0; p < 4; ++p) {  // each pixel over its 3 channels
      auto at = [&](size_t ch) { return n * 12 + ch * 4 + p; };
      double mean = 0, var = 0;
      for (size_t ch = 0; ch < 3; ++ch) mean += x.data[at(ch)] / 3.0;
      for (size_t ch = 0; ch < 3; ++ch)
        var += (x.data[at(ch)] - mean) * (x.data[at(ch)] - mean) / 3.0;
      for (size_t ch = 0; ch < 3; ++ch) {
        want[at(ch)] =
            static_cast<float>((x.data[at(ch)] - mean) / std::sqrt(var + 1e-6) * w[ch] + bias[ch]);
      }
    }
  }
  std::string printed[2];
  for (bool decomposed : {false, true}) {
    LoadedModel m;
    expect_near(run_model(layer_norm_model(decomposed), "input layernorm", x, &m), want, 1e-5);
    m.graph.name = "t";
    printed[decomposed] = ir::print_graph(m.graph, {.locations = false});
  }
  EXPECT_EQ(printed[0], printed[1]);
  EXPECT_NE(printed[0].find("%norm = layernorm(%input) {eps=1e-06}"), std::string::npos)
      << printed[0];
}

// ShuffleNetV2 with a dynamic batch: the reshape targets and slice bounds are computed from
// Shape nodes, x.size(0) staying the batch.
TEST(OnnxZoo, ChannelShuffleAndChunkFromShapeArithmetic) {
  Builder b;
  b.input("x", {-1, 4, 1, 1}).output("y", 4);
  b.init_i64("i0", {0}, true).init_i64("i1", {1}, true).init_i64("two", {2}, true);
  b.init_i64("ax0", {0}).init_i64("g", {2}).init_i64("minus1", {-1}).init_i64("hw", {1, 1});
  b.init_i64("c1", {1}).init_i64("one", {1}).init_i64("two1", {2}).init_i64("zero1", {0});
  b.node("Shape", {"x"}, {"s"});
  set_int(b.node("Gather", {"s", "i0"}, {"n"}), "axis", 0);
  set_int(b.node("Gather", {"s", "i1"}, {"c"}), "axis", 0);
  b.node("Div", {"c", "two"}, {"cg"});
  b.node("Unsqueeze", {"n", "ax0"}, {"n1"});
  b.node("Unsqueeze", {"cg", "ax0"}, {"cg1"});
  set_int(b.node("Concat", {"n1", "g", "cg1", "hw"}, {"shape5"}), "axis", 0);
  b.node("Reshape", {"x", "shape5"}, {"r"}, "/shuffle/Reshape");
  set_ints(b.node("Transpose", {"r"}, {"t"}, "/shuffle/Transpose"), "perm", {0, 2, 1, 3, 4});
  set_int(b.node("Concat", {"n1", "minus1", "hw"}, {"shape4"}), "axis", 0);
  b.node("Reshape", {"t", "shape4"}, {"z"}, "/shuffle/Reshape_1");
  // z.chunk(2, dim=1)[0]: Slice(z, 0, (C + 1) / 2 * 1, axis 1), C from Shape(z)[1].
  b.node("Shape", {"z"}, {"sz"});
  b.node("Gather", {"sz", "c1"}, {"cz"});
  b.node("Add", {"cz", "one"}, {"cz1"});
  b.node("Div", {"cz1", "two1"}, {"half"});
  b.node("Mul", {"half", "one"}, {"end"});
  b.node("Slice", {"z", "zero1", "end", "c1"}, {"y"}, "/chunk/Slice");
  const ref::Tensor x{{2, 4, 1, 1}, {0, 1, 2, 3, 10, 11, 12, 13}};
  // Shuffled channels 0, 2, 1, 3; the first two of them.
  EXPECT_EQ(run_model(b, "input channel_shuffle slice_channels", x),
            (std::vector<float>{0, 2, 10, 12}));
}

// x.view(x.size(0), -1) with a dynamic batch: Reshape to Concat(Unsqueeze(Shape(x)[0]), [-1]).
TEST(OnnxZoo, ReshapeToTheBatchAndMinusOneIsAFlatten) {
  Builder b;
  b.input("x", {-1, 2, 2, 2}).output("y", 2);
  b.init_i64("i0", {0}, true).init_i64("ax0", {0}).init_i64("minus1", {-1});
  b.node("Shape", {"x"}, {"s"});
  b.node("Gather", {"s", "i0"}, {"n"});
  b.node("Unsqueeze", {"n", "ax0"}, {"n1"});
  set_int(b.node("Concat", {"n1", "minus1"}, {"shape"}), "axis", 0);
  b.node("Reshape", {"x", "shape"}, {"y"}, "/flatten/Reshape");
  const ref::Tensor x = image();
  EXPECT_EQ(run_model(b, "input flatten", x), x.data);
}

// PyTorch's AvgPool2d(3, 1, padding=1) (count_include_pad=True): a zero Pad, then the pool.
TEST(OnnxZoo, ZeroPadThenAveragePoolIsAPaddedPoolCountingThePadding) {
  Builder b;
  b.input("x", {-1, 1, 3, 3}).output("y", 4);
  b.init_i64("pads", {0, 0, 1, 1, 0, 0, 1, 1});
  b.node("Pad", {"x", "pads"}, {"p"}, "/pool/Pad");
  pb::NodeProto& pool = b.node("AveragePool", {"p"}, {"y"}, "/pool/AveragePool");
  set_ints(pool, "kernel_shape", {3, 3});
  LoadedModel m;
  const ref::Tensor x{{1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9}};
  const std::vector<float> y = run_model(b, "input avgpool2d", x, &m);
  EXPECT_EQ(ir::format_attrs(m.graph.nodes[1]),
            "{kernel=3x3, stride=1x1, padding=1x1, ceil_mode=false, count_include_pad=true}");
  ASSERT_EQ(y.size(), 9u);
  EXPECT_FLOAT_EQ(y[0], (1 + 2 + 4 + 5) / 9.0f);  // the corner's window: 4 values and 5 zeros
  EXPECT_FLOAT_EQ(y[4], 5.0f);
}

// Squeeze-and-excitation's scale * x (the gate first, as torchvision writes it) and ConvNeXt's
// layer_scale * x.
TEST(OnnxZoo, SqueezeExcitationAndLayerScale) {
  Builder b;
  b.input("x", {-1, 2, 2, 2}).output("y", 4);
  b.init("blk.layer_scale", {2, 1, 1}, {0.5f, -2});
  b.node("GlobalAveragePool", {"x"}, {"p"}, "/se/avgpool/GlobalAveragePool");
  b.node("Sigmoid", {"p"}, {"g"}, "/se/scale_activation/Sigmoid");
  b.node("Mul", {"g", "x"}, {"s"}, "/se/Mul");
  b.node("Mul", {"blk.layer_scale", "s"}, {"y"}, "/blk/Mul");
  LoadedModel m;
  const ref::Tensor x = image();
  const std::vector<float> y = run_model(b, "input global_avgpool sigmoid mul layer_scale", x, &m);
  const ir::Node& mul = m.graph.nodes[3];
  EXPECT_EQ(mul.inputs[0], m.graph.nodes[0].output);  // the image first, the gate second
  EXPECT_EQ(m.graph.nodes[4].name, "blk");
  ASSERT_EQ(y.size(), x.data.size());
  for (size_t n = 0; n < 2; ++n) {
    for (size_t ch = 0; ch < 2; ++ch) {
      double mean = 0;
      for (size_t p = 0; p < 4; ++p) mean += x.data[n * 8 + ch * 4 + p] / 4.0;
      const double gate = 1 / (1 + std::exp(-mean)), scale = ch == 0 ? 0.5 : -2;
      for (size_t p = 0; p < 4; ++p) {
        EXPECT_NEAR(y[n * 8 + ch * 4 + p], x.data[n * 8 + ch * 4 + p] * gate * scale, 1e-5);
      }
    }
  }
}

}  // namespace
}  // namespace zoc
