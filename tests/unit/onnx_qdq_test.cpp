// Tests of the ONNX frontend's QuantizeLinear and DequantizeLinear (ops_qdq.cpp, issue 35): a QDQ
// pair on an activation is the identity and notes the activation's scale, a DequantizeLinear of
// int8 weights and an int32 bias gives their float values, and what zoc's symmetric int8 cannot
// read is refused by name. tests/run_int8.sh runs a model onnxruntime's quantize_static wrote.
#include <gtest/gtest.h>

#include "tests/unit/onnx_builder.h"

namespace zoc {
namespace {

using namespace test::onnx_builder;
constexpr int32_t kInt8 = pb::TensorProto::INT8;
constexpr int32_t kUint8 = pb::TensorProto::UINT8;
constexpr int32_t kInt32 = pb::TensorProto::INT32;

// x -> Q/DQ (0.1) -> Conv(DQ(w int8, per channel), DQ(b int32)) -> Relu -> Q/DQ (0.05) -> y, a
// 2-channel 1x1 convolution of a 2-channel image.
Builder qdq_conv(int32_t zp_type = kInt8, std::vector<int32_t> zp = {0}, size_t act_scales = 1) {
  Builder b;
  b.input("x", {-1, 2, 2, 2}).output("y", 4);
  b.init("sx", act_scales == 1 ? std::vector<int64_t>{} : std::vector<int64_t>{2},
         std::vector<float>(act_scales, 0.1f));
  b.init_int("zx", zp_type, act_scales == 1 ? std::vector<int64_t>{} : std::vector<int64_t>{2},
             std::vector<int32_t>(act_scales, zp[0]));
  b.init_int("wq", kInt8, {2, 2, 1, 1}, {127, -64, 3, -128});
  b.init("ws", {2}, {0.01f, 0.02f}).init_int("wz", kInt8, {2}, {0, 0});
  b.init_int("bq", kInt32, {2}, {100, -50}).init("bs", {2}, {0.001f, 0.002f});
  b.init_int("bz", kInt32, {2}, {0, 0});
  b.init("sy", {}, {0.05f}).init_int("zy", kInt8, {}, {0});
  b.node("QuantizeLinear", {"x", "sx", "zx"}, {"xq"}, "/q/QuantizeLinear");
  b.node("DequantizeLinear", {"xq", "sx", "zx"}, {"xd"}, "/q/DequantizeLinear");
  set_int(b.node("DequantizeLinear", {"wq", "ws", "wz"}, {"w"}, "/w/DequantizeLinear"), "axis", 0);
  set_int(b.node("DequantizeLinear", {"bq", "bs", "bz"}, {"bias"}, "/b/DequantizeLinear"), "axis",
          0);
  set_ints(b.node("Conv", {"xd", "w", "bias"}, {"c"}, "/conv/Conv"), "kernel_shape", {1, 1});
  b.node("Relu", {"c"}, {"r"}, "/relu/Relu");
  b.node("QuantizeLinear", {"r", "sy", "zy"}, {"rq"}, "/rq/QuantizeLinear");
  b.node("DequantizeLinear", {"rq", "sy", "zy"}, {"y"}, "/rq/DequantizeLinear");
  return b;
}

TEST(OnnxQdq, PairsAreTheIdentityWithTheirScalesAndWeightsAreDequantized) {
  ref::Tensor x;
  x.shape = {1, 2, 2, 2};
  x.data = {1, -2, 3, -4, 0.5f, 0.25f, -1, 2};
  LoadedModel m;
  const std::vector<float> y = run_model(qdq_conv(), "input conv2d relu", x, &m);
  // w = [[1.27, -0.64], [0.06, -2.56]], bias = [0.1, -0.1], in float as (q * scale).
  const float w[4] = {127 * 0.01f, -64 * 0.01f, 3 * 0.02f, -128 * 0.02f};
  const float bias[2] = {100 * 0.001f, -50 * 0.002f};
  ASSERT_EQ(y.size(), 8u);
  for (int k = 0; k < 2; ++k) {
    for (int p = 0; p < 4; ++p) {
      const double v =
          double(w[2 * k]) * x.data[p] + double(w[2 * k + 1]) * x.data[4 + p] + bias[k];
      EXPECT_NEAR(y[static_cast<size_t>(4 * k + p)], std::max(v, 0.0), 1e-5) << k << " " << p;
    }
  }
  ASSERT_EQ(m.int8_scales.size(), 2u);
  EXPECT_EQ(m.int8_scales.at("input"), 0.1f);
  const std::string relu = m.graph.value_name(m.graph.outputs[0]);
  EXPECT_EQ(m.int8_scales.at(relu), 0.05f);
}

TEST(OnnxQdq, WhatSymmetricInt8CannotReadIsRefused) {
  expect_refused(qdq_conv(kInt8, {3}), "zero point 3: zoc's int8 is symmetric (zero point 0)");
  expect_refused(qdq_conv(kUint8, {0}), "a zero point of type UINT8: zoc reads INT8 quantization");
  expect_refused(qdq_conv(kInt8, {0}, 2), "per-channel scales of an activation");
  Builder no_zp;  // ONNX's default zero point is uint8
  no_zp.input("x", {-1, 2, 2, 2}).output("y", 4).init("s", {}, {0.5f});
  no_zp.node("QuantizeLinear", {"x", "s"}, {"q"}, "/q/QuantizeLinear");
  no_zp.node("DequantizeLinear", {"q", "s"}, {"y"}, "/q/DequantizeLinear");
  expect_refused(no_zp,
                 "no zero point: QuantizeLinear's default output is uint8, zoc's int8 is signed");
  Builder int8_out;  // the int8 tensor itself is the model's output
  int8_out.input("x", {-1, 2, 2, 2}).output("y", 4).init("s", {}, {0.5f});
  int8_out.init_int("z", kInt8, {}, {0});
  int8_out.node("QuantizeLinear", {"x", "s", "z"}, {"y"}, "/q/QuantizeLinear");
  expect_refused(int8_out, "its int8 result is read by the graph's output");
  Builder mismatch;  // one tensor, two scales
  mismatch.input("x", {-1, 2, 2, 2}).output("y", 4).init("s", {}, {0.5f}).init("t", {}, {0.25f});
  mismatch.init_int("z", kInt8, {}, {0});
  mismatch.node("QuantizeLinear", {"x", "s", "z"}, {"q"}, "/q/QuantizeLinear");
  mismatch.node("DequantizeLinear", {"q", "t", "z"}, {"y"}, "/q/DequantizeLinear");
  expect_refused(mismatch, "a second int8 scale, 0.25, for a tensor already quantized with 0.5");
}

}  // namespace
}  // namespace zoc
