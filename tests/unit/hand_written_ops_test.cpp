// The forms of issue 36 (hand-written and timm models): the binary ops' constant operands and
// broadcasting (kernel, shape rule, the parameter a tensor operand declares, the printer, the
// weights check), and what the passes, training and the cuDNN backend do with them. Whole
// models against PyTorch: tests/numeric/ops_vs_pytorch_test.cpp; shape errors: bad-input files
// (tests/bad_inputs/shapes/binary_*, tests/bad_inputs/yaml/tensor_*).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <vector>

#include "compiler/backend/cudnn/emit_snippet.h"
#include "compiler/backend/reference/interpreter.h"
#include "compiler/backend/reference/kernels.h"
#include "compiler/ir/printer.h"
#include "compiler/ir/shapes.h"
#include "compiler/passes/pipeline.h"
#include "compiler/weights/weights.h"
#include "tests/unit/op_test_util.h"

namespace zoc {
namespace {

// Layers on an input 2 x 3 x 4.
std::optional<ir::Graph> model(const test::TempDir& dir, const std::string& layers,
                               Diagnostics& d) {
  return test::load_layers(dir, layers, d, "2, height: 3, width: 4");
}

// [n 1, c 2, h 1, w 3] minus a one-channel row [1, 1, 3] and by a channel vector [2, 1, 1].
TEST(BinaryKernel, BroadcastsEachDimension) {
  const std::vector<float> x = {1, 2, 3, 4, 5, 6}, row = {10, 20, 30}, vec = {2, -1};
  std::vector<float> y(6);
  ref::binary(ref::BinaryOp::kSub, {x.data(), {2, 1, 3}, true}, {row.data(), {1, 1, 3}, true},
              y.data(), 1, {2, 1, 3});
  EXPECT_EQ(y, (std::vector<float>{-9, -18, -27, -6, -15, -24}));
  // A parameter: one for the whole batch (two samples).
  const std::vector<float> x2 = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  std::vector<float> y2(12);
  ref::binary(ref::BinaryOp::kDiv, {x2.data(), {2, 1, 3}, true}, {vec.data(), {2, 1, 1}, false},
              y2.data(), 2, {2, 1, 3});
  EXPECT_EQ(y2, (std::vector<float>{0.5, 1, 1.5, -4, -5, -6, 3.5, 4, 4.5, -10, -11, -12}));
  // The channel vector first: [2, 1, 1] + [2, 1, 3].
  ref::binary(ref::BinaryOp::kAdd, {vec.data(), {2, 1, 1}, true}, {x.data(), {2, 1, 3}, true},
              y.data(), 1, {2, 1, 3});
  EXPECT_EQ(y, (std::vector<float>{3, 4, 5, 3, 4, 5}));
}

// A tensor operand is a parameter named as the weights file names it (relative to the block
// it is written in), stored with the rank the model gives; the printer shows it as @name.
TEST(BinaryShapes, TensorOperandsAreNamedParameters) {
  test::TempDir dir;
  Diagnostics d;
  auto g = model(dir,
                 "  - norm_sub: {op: sub, tensor: mean, param_rank: 4}\n"
                 "  - blk: {layers: [{ls: {op: mul, tensor: ls.gamma, param_rank: 1}},\n"
                 "                   {one: {op: add, tensor: bias, param_rank: 0}},\n"
                 "                   {flip: {op: div, scalar: 2, reverse: true}}]}\n"
                 "  - map: {op: conv2d, out_channels: 1, kernel: 1}\n"
                 "  - gated: {op: mul, inputs: [map, blk]}\n",
                 d);
  ASSERT_TRUE(g) << d.render();
  auto param = [&](const char* node) { return g->find_node(node)->params.at(0); };
  EXPECT_EQ(param("norm_sub").name, "mean");
  EXPECT_EQ(param("norm_sub").shape, (std::vector<int64_t>{1, 2, 1, 1}));
  EXPECT_FALSE(param("norm_sub").trainable);
  EXPECT_EQ(param("blk.ls").name, "blk.ls.gamma");
  EXPECT_EQ(param("blk.ls").shape, (std::vector<int64_t>{2}));
  EXPECT_EQ(param("blk.one").name, "blk.bias");
  EXPECT_TRUE(param("blk.one").shape.empty());
  EXPECT_TRUE(g->find_node("blk.flip")->params.empty());
  // [1, 3, 4] * [2, 3, 4]: the one-channel map first.
  EXPECT_EQ(g->type(g->find_node("gated")->output).dims, (std::vector<int64_t>{2, 3, 4}));
  const std::string text = ir::print_graph(*g);
  EXPECT_NE(text.find("%norm_sub = sub(%input, @mean) {param_rank=4}"), std::string::npos) << text;
  EXPECT_NE(text.find("%blk.flip = div(%blk.one) {scalar=2, reverse=true}"), std::string::npos)
      << text;
  // The weights file must hold each operand tensor under its name and shape.
  Weights w = init_weights(*g, 1);
  EXPECT_EQ(w.tensors.at("mean"), std::vector<float>(2, 1.0f));  // a buffer's seeded value: 1
  ASSERT_TRUE(save_weights(*g, w, dir.file("w.safetensors")).ok());
  ir::Graph renamed = *g;
  renamed.nodes[static_cast<size_t>(renamed.find_node("norm_sub") - renamed.nodes.data())]
      .operand_tensor = "std";
  Diagnostics ld;
  ASSERT_TRUE(ir::infer_shapes(renamed, ld)) << ld.render();
  EXPECT_FALSE(load_weights(renamed, dir.file("w.safetensors"), ld).has_value());
  EXPECT_NE(ld.render().find("missing tensor 'std' needed by layer 'norm_sub' (sub) with shape "
                             "[1, 2, 1, 1]"),
            std::string::npos)
      << ld.render();
  EXPECT_NE(ld.render().find("unexpected tensor 'mean'"), std::string::npos) << ld.render();
}

// fuse-residual-add takes an add whose operands have one type: a broadcast or a constant one is
// not cuDNN's z and stays a node; the function is unchanged.
TEST(BinaryPasses, OnlyAnAddOfOneShapeBecomesAResidual) {
  test::TempDir dir;
  Diagnostics d;
  auto g = model(dir,
                 "  - conv: {op: conv2d, out_channels: 2, kernel: 3, padding: 1}\n"
                 "  - pool: {op: global_avgpool, input: input}\n"
                 "  - bcast: {op: add, inputs: [conv, pool]}\n"
                 "  - conv2: {op: conv2d, out_channels: 2, kernel: 1}\n"
                 "  - shift: {op: add, scalar: 0.25}\n"
                 "  - conv3: {op: conv2d, out_channels: 2, kernel: 1}\n"
                 "  - res: {op: add, inputs: [conv3, bcast]}\n",
                 d);
  ASSERT_TRUE(g) << d.render();
  const ir::Graph after =
      test::optimize_keeping_function(*g, init_weights(*g, 2), test::wave_input(*g, 2), 1e-6);
  EXPECT_EQ(after.find_node("bcast")->op, ir::OpKind::Add);
  EXPECT_EQ(after.find_node("shift")->op, ir::OpKind::Add);
  EXPECT_EQ(after.find_node("res"), nullptr);  // fused into conv3
  EXPECT_EQ(after.find_node("conv3")->inputs.size(), 2u);
}

// Training differentiates a scalar operand (`sub`), a buffer's (`div`), a parameter's (`bias`)
// and two tensors of one shape (`ratio`), and refuses broadcasting other than an image by its
// channel vector (`mul`, `diff`) and an operand of the weights file not known to be a parameter
// or a buffer (`add`). The cuDNN backend runs every constant operand (zoc's const_op
// kernel) and sub and div of two tensors of one shape, and refuses broadcasting.
TEST(BinaryRefusals, TrainingAndTheCudnnBackend) {
  test::TempDir dir;
  Diagnostics d;
  auto g = model(dir,
                 "  - sub: {op: sub, scalar: 1}\n"
                 "  - div: {op: div, buffer: std}\n"
                 "  - add: {op: add, tensor: shift}\n"
                 "  - pool: {op: global_avgpool}\n"
                 "  - mul: {op: mul, inputs: [pool, add]}\n"
                 "  - fine: {op: mul, inputs: [add, pool]}\n"
                 "  - sum: {op: add, inputs: [fine, mul]}\n"
                 "  - diff: {op: sub, inputs: [sum, pool]}\n"
                 "  - ratio: {op: div, inputs: [diff, sum]}\n"
                 "  - bias: {op: add, parameter: b}\n",
                 d);
  ASSERT_TRUE(g) << d.render();
  test::expect_refusals(
      *g,
      {"m.yaml:6:5: error: layer 'add' (add): an operand from the weights file ('shift') that "
       "may be a parameter, which PyTorch trains, or a buffer, which it keeps fixed: training "
       "needs to know which (a TorchScript model says; in YAML write `parameter:` or `buffer:` "
       "for `tensor:`; an ONNX initializer does not say)",
       "m.yaml:8:5: error: layer 'mul' (mul): no gradient rule for a mul with broadcasting "
       "(other than an image by its channel vector) yet (inference only)",
       "m.yaml:11:5: error: layer 'diff' (sub): no gradient rule for a sub with broadcasting yet "
       "(inference only)"},
      false);
  test::expect_refusals(*g,
                        {"layer 'mul' (mul): the cuDNN backend does not support mul with "
                         "broadcasting other than an image by its channel vector yet",
                         "layer 'diff' (sub): the cuDNN backend does not support sub with "
                         "broadcasting yet"},
                        true);
}

// A parameter two layers read gets one gradient per reader, which training would not sum: the
// second reader is refused (a buffer two layers read trains, fixed).
TEST(BinaryRefusals, AParameterTwoLayersReadIsRefusedForTraining) {
  test::TempDir dir;
  Diagnostics d;
  auto g = model(dir,
                 "  - a: {op: mul, parameter: g}\n"
                 "  - b: {op: mul, parameter: g}\n"
                 "  - c: {op: sub, buffer: m}\n"
                 "  - e: {op: sub, buffer: m}\n",
                 d);
  ASSERT_TRUE(g) << d.render();
  test::expect_refusals(
      *g,
      {"m.yaml:5:5: error: layer 'b' (mul) reads parameter 'g', which layer 'a' reads too; zoc's "
       "trainer does not sum a shared parameter's gradients over its readers yet, so training "
       "refuses it (inference compiles it)"},
      false);
}

// g through the inference passes and lowered for the cuDNN backend in precision p.
bool lower_for_cudnn(ir::Graph& g, cudnn::Precision p, Diagnostics& d) {
  cudnn::EmitOptions options;
  options.precision = p;
  const lower::TargetDesc target = cudnn::lowering_target(options);
  passes::PassOptions popts;
  popts.target = &target;
  return passes::run_pipeline(g, d, popts);
}

// Each constant operand lowers to one const_op layer, in fp32 NCHW and fp16 NHWC: a tensor
// operand gets an aligned fp32 weight slot of one value or one per channel, a scalar none.
TEST(BinaryLowering, ConstantOperandsAreConstOpLayers) {
  test::TempDir dir;
  Diagnostics d;
  auto g = model(dir,
                 "  - sub: {op: sub, scalar: 1, reverse: true}\n"
                 "  - div: {op: div, tensor: std}\n"
                 "  - one: {op: mul, tensor: gain, param_rank: 0}\n"
                 "  - add: {op: add, tensor: shift, param_rank: 4}\n",
                 d);
  ASSERT_TRUE(g) << d.render();
  for (const cudnn::Precision p : {cudnn::Precision::kFP32, cudnn::Precision::kFP16}) {
    ir::Graph copy = *g;
    ASSERT_TRUE(lower_for_cudnn(copy, p, d)) << d.render();
    for (const char* name : {"sub", "div", "one", "add"}) {
      const ir::Node* n = copy.find_node(name);
      ASSERT_NE(n, nullptr) << name;
      EXPECT_EQ(n->lowered->kind, ir::LayerKind::ConstOp) << name;
      EXPECT_EQ(n->lowered->bias_offset, -1) << name;
      const bool tensor = std::string(name) != "sub";
      EXPECT_EQ(n->lowered->weight_offset >= 0, tensor) << name;
      if (tensor) {
        EXPECT_EQ(n->lowered->weight_offset % 256, 0) << name;
      }
    }
    EXPECT_EQ(copy.target->weight_bytes, 3 * 256);  // std [2], gain [], shift [1, 2, 1, 1]
  }
}

// A reshape or flatten is a view where both sides are stored in NCHW's order (NCHW; NHWC with one
// channel or one pixel), else a copy between the stored orders; a flatten of an NHWC image that
// only a linear layer reads stays a view (the linear layer permutes its weights instead).
TEST(ReshapeLowering, ViewWhereTheStoredOrderAgrees) {
  test::TempDir dir;
  Diagnostics d;
  auto g = model(dir,
                 "  - conv: {op: conv2d, out_channels: 4, kernel: 1}\n"
                 "  - pool: {op: global_avgpool}\n"
                 "  - row: {op: reshape, channels: 1, height: 2, width: 2}\n"
                 "  - pairs: {op: reshape, channels: 2, height: 1, width: 2}\n"
                 "  - pairs_flat: {op: flatten}\n"
                 "  - conv_flat: {op: flatten, input: conv}\n"
                 "  - fc: {op: linear, out_features: 3}\n"
                 "  - conv_flat2: {op: flatten, input: conv}\n"
                 "output: [pairs_flat, fc, conv_flat2]\n",
                 d);
  ASSERT_TRUE(g) << d.render();
  for (const cudnn::Precision p : {cudnn::Precision::kFP32, cudnn::Precision::kFP16}) {
    ir::Graph copy = *g;
    ASSERT_TRUE(lower_for_cudnn(copy, p, d)) << d.render();
    const bool nhwc = p == cudnn::Precision::kFP16;
    const auto kind = [&](const char* name) { return copy.find_node(name)->lowered->kind; };
    const ir::LayerKind copied = nhwc ? ir::LayerKind::Relayout : ir::LayerKind::View;
    EXPECT_EQ(kind("row"), ir::LayerKind::View);
    EXPECT_EQ(kind("pairs"), copied);
    EXPECT_EQ(kind("pairs_flat"), copied);
    EXPECT_EQ(kind("conv_flat"), ir::LayerKind::View);
    EXPECT_EQ(kind("conv_flat2"), copied);
    EXPECT_EQ(copy.find_node("fc")->lowered->weights,
              nhwc ? ir::WeightLayout::kRowsHWC : ir::WeightLayout::kRows);
  }
}

// A scalar constant prints as a float literal that C++ reads back to the same float the
// interpreter casts the attribute to.
TEST(BinaryLowering, ScalarsPrintAsExactFloatLiterals) {
  using cudnn::snippet::float_literal;
  EXPECT_EQ(float_literal(1), "1.0f");
  EXPECT_EQ(float_literal(-0.125), "-0.125f");
  EXPECT_EQ(float_literal(-0.0), "-0.0f");
  EXPECT_EQ(float_literal(1e-6), "1e-06f");
  EXPECT_EQ(float_literal(0.1), "0.1f");
  EXPECT_EQ(float_literal(1e30), "1e+30f");
  for (const double v : {0.1, 1.0 / 3, 123456789.0, 2.5e-20}) {
    const std::string text = float_literal(v);
    EXPECT_EQ(std::strtof(text.c_str(), nullptr), static_cast<float>(v)) << text;
  }
}

}  // namespace
}  // namespace zoc
