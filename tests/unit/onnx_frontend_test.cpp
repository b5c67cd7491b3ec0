// The ONNX frontend's op table and naming, on small models built here with libonnx's protobuf
// classes: what each ONNX form maps to (or why it is refused), the numbers of the forms that
// rearrange weights (Gemm without transB, MatMul + Add, a bias added after a convolution), names
// and locations, constants, bound inputs, and the opset-dependent attributes. Whole exported
// models are tested in tests/numeric/onnx_test.cpp, broken files in tests/bad_inputs/onnx/, and
// ONNX's own conformance cases in tests/onnx/.
#include <onnx/onnx_pb.h>

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "compiler/backend/reference/interpreter.h"
#include "compiler/frontend/onnx/onnx_frontend.h"
#include "compiler/ir/printer.h"
#include "tests/unit/onnx_builder.h"
#include "tests/unit/test_util.h"

namespace zoc {
namespace {

using namespace test::onnx_builder;  // NOLINT: the builder's vocabulary

// A features model: x [N, 3] -> ... -> y.
Builder features_model(int64_t opset = 17) {
  Builder b(opset);
  b.input("img", {-1, 3, 1, 1}).output("y", 2);
  b.node("Flatten", {"img"}, {"x"}, "/flatten/Flatten");
  return b;
}

ref::Tensor features_input() {
  return ref::Tensor{{2, 3, 1, 1}, {1.f, -2.f, 0.5f, 3.f, 0.25f, -1.f}};
}

// y = x W^T + b for x [2, 3], W [out, 3].
std::vector<float> linear_ref(const std::vector<float>& w, const std::vector<float>& bias) {
  const ref::Tensor x = features_input();
  const size_t out = bias.size();
  std::vector<float> y;
  for (size_t n = 0; n < 2; ++n) {
    for (size_t o = 0; o < out; ++o) {
      double s = bias[o];
      for (size_t k = 0; k < 3; ++k) s += double(x.data[n * 3 + k]) * w[o * 3 + k];
      y.push_back(static_cast<float>(s));
    }
  }
  return y;
}

void expect_output(const LoadedModel& m, const std::vector<float>& want) {
  auto out = ref::run(m.graph, *m.weights, features_input());
  ASSERT_TRUE(out.ok()) << out.error().message;
  ASSERT_EQ((*out)[0].data.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR((*out)[0].data[i], want[i], 1e-5) << i;
}

TEST(OnnxOps, GemmWithoutTransBTransposesItsWeightAtLoad) {
  Builder b = features_model();
  b.init("fc.weight", {3, 2}, {1, 2, 3, 4, 5, 6}).init("fc.bias", {2}, {0.5f, -0.5f});
  b.node("Gemm", {"x", "fc.weight", "fc.bias"}, {"y"}, "/fc/Gemm");
  test::TempDir dir;
  Diagnostics d;
  auto m = load(b.save(dir), d);
  ASSERT_TRUE(m) << d.render();
  EXPECT_EQ(ops_of(m->graph), "input flatten linear");
  // [in, out] = [[1, 2], [3, 4], [5, 6]] is the layer's [out, in] = [[1, 3, 5], [2, 4, 6]].
  EXPECT_EQ(*m->weights->find("fc.weight"), (std::vector<float>{1, 3, 5, 2, 4, 6}));
  expect_output(*m, linear_ref({1, 3, 5, 2, 4, 6}, {0.5f, -0.5f}));
}

TEST(OnnxOps, GemmRefusesScaling) {
  Builder b = features_model();
  b.init("w", {2, 3}, ramp(6)).init("c", {2}, {0, 0});
  set_float(b.node("Gemm", {"x", "w", "c"}, {"y"}, "g"), "alpha", 2.0f);
  expect_refused(b, "node 'g' (Gemm, #1): alpha=2, beta=1: zoc maps Gemm with alpha = beta = 1");
}

TEST(OnnxOps, MatMulThenAddIsOneLinearLayerWithBias) {
  Builder b = features_model();
  b.init("W", {3, 2}, {1, 2, 3, 4, 5, 6}).init("B", {2}, {1, 2});
  b.node("MatMul", {"x", "W"}, {"xw"}, "/fc/MatMul");
  b.node("Add", {"xw", "B"}, {"y"}, "/fc/Add");
  test::TempDir dir;
  Diagnostics d;
  auto m = load(b.save(dir), d);
  ASSERT_TRUE(m) << d.render();
  EXPECT_EQ(ops_of(m->graph), "input flatten linear");
  const ir::Node* fc = m->graph.find_node("fc");
  ASSERT_NE(fc, nullptr);
  EXPECT_TRUE(fc->attrs.b("bias"));
  expect_output(*m, linear_ref({1, 3, 5, 2, 4, 6}, {1, 2}));
}

TEST(OnnxOps, AddOfAChannelConstantIsTheConvolutionsBias) {
  Builder b;
  b.input("img", {-1, 1, 3, 3}).output("y", 4);
  b.init("conv.weight", {2, 1, 1, 1}, {1, 2}).init("conv.bias", {1, 2, 1, 1}, {10, 20});
  b.node("Conv", {"img", "conv.weight"}, {"c"}, "/conv/Conv");
  b.node("Add", {"c", "conv.bias"}, {"y"}, "/conv/Add");
  test::TempDir dir;
  Diagnostics d;
  auto m = load(b.save(dir), d);
  ASSERT_TRUE(m) << d.render();
  EXPECT_EQ(ops_of(m->graph), "input conv2d");
  EXPECT_TRUE(m->graph.find_node("conv")->attrs.b("bias"));
  auto out = ref::run(m->graph, *m->weights, ref::Tensor{{1, 1, 3, 3}, ramp(9)});
  ASSERT_TRUE(out.ok());
  const std::vector<float> x = ramp(9);
  for (size_t i = 0; i < 9; ++i) {
    EXPECT_FLOAT_EQ((*out)[0].data[i], x[i] + 10) << i;
    EXPECT_FLOAT_EQ((*out)[0].data[9 + i], 2 * x[i] + 20) << i;
  }
}

TEST(OnnxOps, AddBroadcastAlongWidthIsNotABias) {
  Builder b;
  b.input("img", {-1, 1, 3, 2}).output("y", 4);
  b.init("w", {2, 1, 1, 1}, {1, 2}).init("b", {2}, {10, 20});
  b.node("Conv", {"img", "w"}, {"c"}, "conv");
  b.node("Add", {"c", "b"}, {"y"}, "add");
  expect_refused(b,
                 "node 'add' (Add, #1): adding constant 'b' of shape [2] to a tensor computed "
                 "from the input");
}

TEST(OnnxOps, ClipAtZeroIsRelu) {
  for (int64_t opset : {6, 11, 13}) {
    Builder b = features_model(opset);
    pb::NodeProto& clip = b.node(
        "Clip", opset < 11 ? std::vector<std::string>{"x"} : std::vector<std::string>{"x", "lo"},
        {"y"}, "clip");
    if (opset < 11) {
      set_float(clip, "min", 0.0f);
    } else {
      b.init("lo", {}, {0.0f});
    }
    test::TempDir dir;
    Diagnostics d;
    auto m = load(b.save(dir), d);
    ASSERT_TRUE(m) << opset << ": " << d.render();
    EXPECT_EQ(ops_of(m->graph), "input flatten relu") << opset;
  }
}

// ReLU6 (torch.onnx.export: Clip(x, 0, 6)) is hardtanh; a clip open on one side other than
// ReLU's is not.
TEST(OnnxOps, ClipToSixIsHardtanhAndOneSidedClipsAreRefused) {
  Builder b = features_model(6);
  pb::NodeProto& clip = b.node("Clip", {"x"}, {"y"}, "act");
  set_float(clip, "min", 0.0f);
  set_float(clip, "max", 6.0f);
  test::TempDir dir;
  Diagnostics d;
  auto m = load(b.save(dir), d);
  ASSERT_TRUE(m) << d.render();
  EXPECT_EQ(ops_of(m->graph), "input flatten hardtanh");
  EXPECT_EQ(ir::format_attrs(m->graph.nodes[2]), "{min_val=0, max_val=6}");
  Builder one_sided = features_model(13);
  one_sided.node("Clip", {"x", "lo"}, {"y"}, "act");
  one_sided.init("lo", {}, {-1.0f});
  expect_refused(one_sided, "node 'act' (Clip, #1): clipping to [-1, inf]: zoc maps Clip as ReLU");
}

TEST(OnnxOps, SoftmaxOverFeaturesInEveryOpset) {
  for (int64_t opset : {7, 11, 13}) {
    Builder b = features_model(opset);
    b.node("Softmax", {"x"}, {"y"}, "sm");
    test::TempDir dir;
    Diagnostics d;
    auto m = load(b.save(dir), d);
    ASSERT_TRUE(m) << opset << ": " << d.render();
    EXPECT_EQ(ops_of(m->graph), "input flatten softmax") << opset;
  }
  Builder image;
  image.input("img", {-1, 3, 2, 2}).output("y", 4);
  image.node("Softmax", {"img"}, {"y"}, "sm");
  expect_refused(image, "node 'sm' (Softmax, #0): softmax at axis -1 of [N, 3, 2, 2]");
}

TEST(OnnxOps, BatchNormKeepsPyTorchsEpsAndMomentum) {
  Builder b;
  b.input("img", {-1, 2, 2, 2}).output("y", 4);
  for (const char* p : {"bn.weight", "bn.bias", "bn.running_mean"}) b.init(p, {2}, {0.5f, 1.5f});
  b.init("bn.running_var", {2}, {1, 2});
  b.node("BatchNormalization", {"img", "bn.weight", "bn.bias", "bn.running_mean", "bn.running_var"},
         {"y"}, "/bn/BatchNormalization");
  test::TempDir dir;
  Diagnostics d;
  auto m = load(b.save(dir), d);
  ASSERT_TRUE(m) << d.render();
  const ir::Node* bn = m->graph.find_node("bn");
  ASSERT_NE(bn, nullptr);
  EXPECT_EQ(bn->attrs.f("eps"), 1e-5);      // not float32's 9.99999975e-06
  EXPECT_EQ(bn->attrs.f("momentum"), 0.1);  // ONNX's 0.9 weighs the running value
}

TEST(OnnxOps, DropoutAtInferenceAndItsTrainingForms) {
  Builder b = features_model(13);
  b.init("ratio", {}, {0.25f});
  b.node("Dropout", {"x", "ratio"}, {"y"}, "drop");
  test::TempDir dir;
  Diagnostics d;
  auto m = load(b.save(dir), d);
  ASSERT_TRUE(m) << d.render();
  EXPECT_EQ(m->graph.find_node("drop")->attrs.f("p"), 0.25);

  Builder training = features_model(13);
  training.init("ratio", {}, {0.25f}).init_bool("mode", true);
  training.node("Dropout", {"x", "ratio", "mode"}, {"y"}, "drop");
  expect_refused(training, "node 'drop' (Dropout, #1): training_mode is true");

  Builder mask = features_model(13);
  mask.node("Dropout", {"x"}, {"d", "m"}, "drop");
  mask.node("Add", {"d", "m"}, {"y"}, "add");
  expect_refused(mask, "node 'drop' (Dropout, #1): its mask output is used");
}

void set_value_ints(pb::NodeProto& n, const std::vector<int64_t>& v) {
  pb::AttributeProto* a = n.add_attribute();
  a->set_name("value_ints");
  a->set_type(pb::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}

TEST(OnnxOps, ReshapeToFeatures) {
  for (const std::vector<int64_t>& shape : {std::vector<int64_t>{0, -1}, {-1, 12}, {2, -1}}) {
    Builder b;
    b.input("img", {2, 3, 2, 2}).output("y", 2);  // a fixed batch of 2 may be spelled out
    b.init_i64("shape", shape);
    b.node("Reshape", {"img", "shape"}, {"y"}, "/Reshape");
    test::TempDir dir;
    Diagnostics d;
    auto m = load(b.save(dir), d);
    ASSERT_TRUE(m) << d.render();
    EXPECT_EQ(ops_of(m->graph), "input flatten");
  }
  // The shape from a Constant node; one that keeps the channels is not a flatten.
  Builder b;
  b.input("img", {-1, 3, 2, 2}).output("y", 2);
  set_value_ints(b.node("Constant", {}, {"shape"}, "k"), {0, 3, -1});
  b.node("Reshape", {"img", "shape"}, {"y"}, "r");
  expect_refused(b,
                 "node 'r' (Reshape, #1): a reshape of [N, 3, 2, 2] to [0, 3, -1]: zoc "
                 "reshapes only to [N, features]");
}

TEST(OnnxOps, FlattenAtAxisOneOnly) {
  Builder b = features_model();
  b.node("Flatten", {"x"}, {"y"}, "again");  // [N, F] stays as it is
  test::TempDir dir;
  Diagnostics d;
  auto m = load(b.save(dir), d);
  ASSERT_TRUE(m) << d.render();
  EXPECT_EQ(ops_of(m->graph), "input flatten");
  Builder zero;
  zero.input("img", {-1, 3, 2, 2}).output("y", 4);
  set_int(zero.node("Flatten", {"img"}, {"y"}, "f"), "axis", 0);
  expect_refused(zero, "node 'f' (Flatten, #0): Flatten at axis 0 of a rank-4 tensor");
}

TEST(OnnxOps, ConcatAlongChannelsWithTheOldDefaultAxis) {
  for (int64_t opset : {1, 13}) {
    Builder b(opset);
    b.input("img", {-1, 2, 3, 3}).output("y", 4);
    b.node("Relu", {"img"}, {"a"}, "/a/Relu");
    b.node("Sigmoid", {"img"}, {"b"}, "/b/Sigmoid");
    pb::NodeProto& cat = b.node("Concat", {"a", "b"}, {"y"}, "/Concat");
    if (opset >= 4) set_int(cat, "axis", 1);
    test::TempDir dir;
    Diagnostics d;
    auto m = load(b.save(dir), d);
    ASSERT_TRUE(m) << opset << ": " << d.render();
    EXPECT_EQ(ops_of(m->graph), "input relu sigmoid concat") << opset;
    EXPECT_EQ(m->graph.type(m->graph.outputs[0]).dims, (std::vector<int64_t>{4, 3, 3}));
  }
}

TEST(OnnxOps, CeilModeWherePyTorchsRuleDiffersIsRefused) {
  // 3 inputs, window 2, stride 2, padding 1: ONNX's formula gives 3 windows; PyTorch drops the
  // last, which would start in the right padding.
  Builder b;
  b.input("img", {-1, 1, 3, 3}).output("y", 4);
  pb::NodeProto& pool = b.node("MaxPool", {"img"}, {"y"}, "pool");
  set_ints(pool, "kernel_shape", {2, 2});
  set_ints(pool, "strides", {2, 2});
  set_ints(pool, "pads", {1, 1, 1, 1});
  set_int(pool, "ceil_mode", 1);
  expect_refused(b,
                 "node 'pool' (MaxPool, #0): ceil_mode gives 3 outputs along an axis of 3 where "
                 "PyTorch's rule");
}

TEST(OnnxOps, EveryUnsupportedNodeInOneErrorAndOldBatchNormTraining) {
  Builder b(6);
  b.input("img", {-1, 2, 2, 2}).output("y", 4);
  for (const char* p : {"s", "bias", "mean", "var"}) b.init(p, {2}, {1, 1});
  b.node("BatchNormalization", {"img", "s", "bias", "mean", "var"}, {"a"}, "bn");  // is_test=0
  b.node("Softsign", {"a"}, {"e"});      // (Elu before ops_dense.cpp mapped it)
  b.node("Selu", {"e"}, {"y"}, "selu");  // listed although its input is an unsupported node's
  test::TempDir dir;
  Diagnostics d;
  EXPECT_FALSE(load(b.save(dir), d));
  ASSERT_EQ(d.error_count(), 1u) << d.render();
  const std::string e = d.render();
  for (const char* part :
       {": error: 3 unsupported nodes (zoc maps Conv, ",
        "\n  node 'bn' (BatchNormalization, #0): training mode (batch statistics)",
        "\n  node #1 (Softsign)\n", "\n  node 'selu' (Selu, #2)"}) {
    EXPECT_NE(e.find(part), std::string::npos) << part << "\n" << e;
  }
}

// torch.onnx.export gives each name of a deduplicated initializer an Identity node: the layer is
// named by the name it reads. A second layer on the same weight is named after its node.
TEST(OnnxNames, IdentityAliasesAndSharedWeights) {
  Builder b;
  b.input("img", {-1, 1, 2, 2}).output("y", 4);
  b.init("a.weight", {1, 1, 1, 1}, {2});
  b.node("Identity", {"a.weight"}, {"b.weight"}, "Identity_0");
  b.node("Conv", {"img", "b.weight"}, {"c"}, "/b/Conv");
  b.node("Conv", {"c", "b.weight"}, {"y"}, "/b_again/Conv");
  test::TempDir dir;
  Diagnostics d;
  auto m = load(b.save(dir), d);
  ASSERT_TRUE(m) << d.render();
  ASSERT_EQ(ops_of(m->graph), "input conv2d conv2d");
  EXPECT_EQ(m->graph.nodes[1].name, "b");
  EXPECT_EQ(m->graph.nodes[2].name, "b_again");
  // One tensor for both (issue 36): the second Conv reads the first's weights, not a copy.
  EXPECT_EQ(m->graph.nodes[2].weights_of, "b");
  EXPECT_EQ(m->graph.nodes[2].params.at(0).name, "b.weight");
  ASSERT_NE(m->weights->find("b.weight"), nullptr);
  EXPECT_EQ(*m->weights->find("b.weight"), std::vector<float>{2});
  EXPECT_EQ(m->weights->find("b_again.weight"), nullptr);
  EXPECT_EQ(m->weights->tensors.size(), 1u);
}

TEST(OnnxNames, UnnamedNodesAndTheirLocations) {
  Builder b;
  b.input("img", {-1, 1, 2, 2}).output("y", 4);
  b.node("Relu", {"img"}, {"r"});
  b.node("Relu", {"r"}, {"y"});
  test::TempDir dir;
  const std::string path = b.save(dir);
  Diagnostics d;
  auto m = load(path, d);
  ASSERT_TRUE(m) << d.render();
  EXPECT_EQ(m->graph.nodes[1].name, "relu");
  EXPECT_EQ(m->graph.nodes[2].name, "relu_1");
  EXPECT_EQ(m->graph.nodes[2].loc.str(), path + ": node #1 (Relu)");
  EXPECT_EQ(m->graph.nodes[0].loc.str(), path + ": graph input 'img'");
}

// Nodes whose results reach no output are not translated, supported or not.
TEST(OnnxGraph, DeadNodesDoNotMatter) {
  Builder b;
  b.input("img", {-1, 1, 2, 2}).output("y", 4);
  b.node("Relu", {"img"}, {"y"}, "relu");
  b.node("Elu", {"img"}, {"unused"}, "leftover");
  test::TempDir dir;
  Diagnostics d;
  auto m = load(b.save(dir), d);
  ASSERT_TRUE(m) << d.render();
  EXPECT_EQ(ops_of(m->graph), "input relu");
}

// What the conformance test does with a case's inputs after the first.
TEST(OnnxGraph, BoundInputsBecomeWeights) {
  Builder b;
  b.input("img", {1, 1, 2, 2}).input("W", {1, 1, 1, 1}).output("y", 4);
  b.node("Conv", {"img", "W"}, {"y"}, "conv");
  test::TempDir dir;
  pb::TensorProto w;
  w.set_data_type(pb::TensorProto::FLOAT);
  for (int k = 0; k < 4; ++k) w.add_dims(1);
  w.add_float_data(3.0f);
  LoadOptions opts;
  opts.bound_inputs = {{"W", w.SerializeAsString()}};
  Diagnostics d;
  auto m = load_model_and_weights(b.save(dir), d, opts);
  ASSERT_TRUE(m) << d.render();
  EXPECT_EQ(*m->weights->find("conv.weight"), std::vector<float>{3});
  Diagnostics d2;
  EXPECT_FALSE(load_model_and_weights(b.save(dir), d2));
  EXPECT_NE(d2.render().find("the graph has 2 inputs: 'img' and 1 that nodes read as weights "
                             "('W'): the model's weights are graph inputs"),
            std::string::npos)
      << d2.render();
}

TEST(OnnxTensors, ReadTensorFile) {
  test::TempDir dir;
  pb::TensorProto t;
  t.set_name("x");
  t.set_data_type(pb::TensorProto::FLOAT16);
  t.add_dims(2);
  t.add_int32_data(0x3c00);  // 1.0
  t.add_int32_data(0xc000);  // -2.0
  auto x = onnx::read_tensor_file(dir.write("x.pb", t.SerializeAsString()));
  ASSERT_TRUE(x.ok()) << x.error().message;
  EXPECT_EQ(x->dims, std::vector<int64_t>{2});
  EXPECT_EQ(x->values, (std::vector<float>{1.0f, -2.0f}));
  t.set_data_type(pb::TensorProto::INT32);
  auto i = onnx::read_tensor_file(dir.write("i.pb", t.SerializeAsString()));
  ASSERT_FALSE(i.ok());
  EXPECT_NE(i.error().message.find("tensor 'x' is of type INT32"), std::string::npos);
  t.add_int32_data(7);  // 3 values for dims [2]
  auto bad = onnx::read_tensor_file(dir.write("bad.pb", t.SerializeAsString()));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("it has dims [2] (2 elements) but its int32_data holds 3"),
            std::string::npos)
      << bad.error().message;
}

// Files zoc cannot read are errors at the file, not at "<unknown>" (issue 31).
TEST(OnnxFile, UnreadableFilesAreLocatedAtThePath) {
  test::TempDir dir;
  for (const std::string& path : {dir.file("missing.onnx"), dir.file("")}) {
    Diagnostics d;
    EXPECT_FALSE(onnx::load_model(path, {}, d));
    ASSERT_EQ(d.all().size(), 1u) << d.render();
    EXPECT_EQ(d.all()[0].loc.file, path);
    EXPECT_EQ(d.all()[0].message, path == dir.file("") ? "not a regular file" : "no such file");
  }
}

}  // namespace
}  // namespace zoc
