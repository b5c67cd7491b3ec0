// ONNX files newer than libonnx 1.12's checker knows (IR 9 and 10, opsets 18 to 21), as the
// dynamo exporter of PyTorch 2.9 and later writes them (issue 32): the forms whose inputs or
// attributes moved in those opsets (compiler/frontend/onnx/ops_*.cpp), the exporter's own forms
// (as_strided, name_scopes in the nodes' metadata), and the shape arithmetic the TorchScript-based
// exporter writes for a Pad's pads. Each on a small model built here: the IR it becomes and the
// numbers the interpreter computes. The exported corpus models are checked in tests/onnx/dynamo/;
// every refusal is a file in tests/bad_inputs/onnx/.
#include <google/protobuf/unknown_field_set.h>
#include <gtest/gtest.h>

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

// The dynamo exporter's header: IR 10, opset 20 unless given.
Builder newer(int64_t opset = 20) {
  Builder b(opset);
  b.ir(10);
  return b;
}

// run_model (onnx_builder.h), also printing the IR into `printed`.
std::vector<float> run_printed(const Builder& b, const std::string& ops, const ref::Tensor& x,
                               std::string& printed) {
  LoadedModel m;
  std::vector<float> y = run_model(b, ops, x, &m);
  printed = ir::print_graph(m.graph, {.locations = false});
  return y;
}

ref::Tensor image(int64_t n, int64_t c, int64_t h, int64_t w) {
  ref::Tensor x{{n, c, h, w}, {}};
  for (int64_t i = 0; i < n * c * h * w; ++i)
    x.data.push_back(0.5f * static_cast<float>(i % 13) - 3.f);
  return x;
}

void expect_near(const std::vector<float>& got, const std::vector<float>& want, double tol = 1e-5) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << i;
}

// Opset 18 moved ReduceMean's axes to an input; noop_with_empty_axes without axes is the
// identity (and without it every axis, which zoc refuses for an image).
TEST(OnnxNewer, ReduceMeanTakesItsAxesAsAnInputFromOpset18) {
  Builder b = newer();
  b.input("x", {-1, 2, 2, 2}).output("y", 2).init_i64("hw", {-1, -2});
  b.node("Relu", {"x"}, {"r"});
  set_int(b.node("ReduceMean", {"r"}, {"same"}), "noop_with_empty_axes", 1);
  set_int(b.node("ReduceMean", {"same", "hw"}, {"y"}), "keepdims", 0);
  const ref::Tensor x = image(2, 2, 2, 2);
  std::vector<float> want;
  for (size_t k = 0; k < 4; ++k) {
    double sum = 0;
    for (size_t p = 0; p < 4; ++p) sum += std::max(0.f, x.data[k * 4 + p]);
    want.push_back(static_cast<float>(sum / 4));
  }
  expect_near(run_model(b, "input relu global_avgpool flatten", x), want);
  Builder all = newer();
  all.input("x", {-1, 2, 2, 2}).output("y", 4);
  all.node("ReduceMean", {"x"}, {"y"}, "mean");
  expect_refused(all, "node 'mean' (ReduceMean, #0): a mean over axes all of an activation");
}

// Split-18's num_outputs: parts of ceil(C / n) and a smaller last one, as torch.chunk.
TEST(OnnxNewer, SplitByNumOutputsGivesTheLastPartTheRest) {
  Builder b = newer(18);
  b.input("x", {-1, 5, 1, 1}).output("y", 4);
  pb::NodeProto& s = b.node("Split", {"x"}, {"a", "b"});
  set_int(s, "axis", 1);
  set_int(s, "num_outputs", 2);
  set_int(b.node("Concat", {"b", "a"}, {"y"}), "axis", 1);
  const ref::Tensor x{{1, 5, 1, 1}, {0, 1, 2, 3, 4}};
  EXPECT_EQ(run_model(b, "input slice_channels slice_channels concat", x),
            (std::vector<float>{3, 4, 0, 1, 2}));
  Builder empty_last = newer(18);  // 4 channels in 3 parts of 2: nothing left for the third
  empty_last.input("x", {-1, 4, 1, 1}).output("y", 4);
  pb::NodeProto& t = empty_last.node("Split", {"x"}, {"a", "b", "c"}, "split");
  set_int(t, "axis", 1);
  set_int(t, "num_outputs", 3);
  set_int(empty_last.node("Concat", {"a", "b", "c"}, {"y"}), "axis", 1);
  expect_refused(empty_last,
                 "node 'split' (Split, #0): 4 channels in 3 parts of 2 leave the last "
                 "part empty");
}

// Pad-18's axes input: pads [begin..., end...] for the axes it lists, here H and W before an
// AveragePool that counts them (PyTorch's count_include_pad).
TEST(OnnxNewer, PadAxesInputCoversTheAxesItNames) {
  Builder b = newer();
  b.input("x", {-1, 1, 2, 2})
      .output("y", 4)
      .init_i64("pads", {1, 2, 1, 2})
      .init_i64("axes", {2, 3});
  b.node("Pad", {"x", "pads", "", "axes"}, {"p"});
  set_ints(b.node("AveragePool", {"p"}, {"y"}), "kernel_shape", {3, 5});
  const ref::Tensor x{{1, 1, 2, 2}, {1, 2, 3, 4}};
  // Padded to 4 x 6 with the image at rows 1-2, columns 2-3; 3 x 5 windows: 2 x 2 outputs.
  std::vector<float> want;
  for (int oy = 0; oy < 2; ++oy) {
    for (int ox = 0; ox < 2; ++ox) {
      double sum = 0;
      for (int y = oy; y < oy + 3; ++y)
        for (int xx = ox; xx < ox + 5; ++xx)
          if (y >= 1 && y <= 2 && xx >= 2 && xx <= 3)
            sum += x.data[static_cast<size_t>((y - 1) * 2 + xx - 2)];
      want.push_back(static_cast<float>(sum / 15));
    }
  }
  std::string printed;
  expect_near(run_printed(b, "input avgpool2d", x, printed), want);
  EXPECT_NE(printed.find("padding=1x2"), std::string::npos) << printed;
}

TEST(OnnxNewer, GeluOfOpset20InBothForms) {
  const ref::Tensor x = image(1, 2, 2, 2);
  for (const char* approximate : {"none", "tanh"}) {
    Builder b = newer();
    b.input("x", {-1, 2, 2, 2}).output("y", 4);
    set_string(b.node("Gelu", {"x"}, {"y"}), "approximate", approximate);
    const bool tanh_form = std::string(approximate) == "tanh";
    std::vector<float> want;
    for (float v : x.data) {
      const double t = 0.7978845608028654 * (v + 0.044715 * v * v * v);
      want.push_back(static_cast<float>(tanh_form ? 0.5 * v * (1 + std::tanh(t))
                                                  : 0.5 * v * (1 + std::erf(v / std::sqrt(2.0)))));
    }
    expect_near(run_model(b, tanh_form ? "input gelu_tanh" : "input gelu", x), want);
  }
}

// The dynamo exporter's as_strided of a tensor onto its own shape and strides (timm's ConvNeXt
// head): a Reshape to [-1] and a Gather of every element in order is the tensor; any other
// order is refused at the Gather.
TEST(OnnxNewer, AsStridedOntoItsOwnStridesIsTheTensor) {
  for (bool in_order : {true, false}) {
    Builder b = newer();
    b.input("x", {1, 2, 2, 1}).output("y", {1, 2, 2, 1}).init_i64("flat", {-1});
    b.init_i64("order",
               in_order ? std::vector<int64_t>{0, 1, 2, 3} : std::vector<int64_t>{1, 0, 2, 3},
               false, {1, 2, 2, 1});
    b.node("Relu", {"x"}, {"r"});
    b.node("Reshape", {"r", "flat"}, {"v"});
    set_int(b.node("Gather", {"v", "order"}, {"g"}, "as_strided"), "axis", 0);
    b.node("Sigmoid", {"g"}, {"y"});
    if (!in_order) {
      expect_refused(b,
                     "node 'as_strided' (Gather, #2): a Gather of a tensor flattened with its "
                     "batch (a Reshape to [-1]) other than every element in order");
      continue;
    }
    const ref::Tensor x{{1, 2, 2, 1}, {-1, 2, -3, 4}};
    expect_near(run_model(b, "input relu sigmoid", x),
                {0.5f, 1 / (1 + std::exp(-2.f)), 0.5f, 1 / (1 + std::exp(-4.f))});
  }
}

// Adds the dynamo exporter's name_scopes to node n's metadata_props: a field (9) libonnx 1.12's
// NodeProto does not have, so it is written as protobuf writes an unknown field.
void scopes(pb::NodeProto& n, const std::string& value) {
  pb::StringStringEntryProto e;
  e.set_key("pkg.torch.onnx.name_scopes");
  e.set_value(value);
  n.GetReflection()->MutableUnknownFields(&n)->AddLengthDelimited(9, e.SerializeAsString());
}

// Layers take the module path of their node's name_scopes, a folded BatchNorm's "<weight>_bias"
// is the convolution's bias, and a node the optimizer made takes the scope its readers share.
TEST(OnnxNewer, LayersTakeTheNameScopesOfTheirMetadata) {
  Builder b = newer();
  b.input("x", {-1, 1, 2, 2}).output("y", 4);
  b.init("block.conv.weight", {2, 1, 1, 1}, {1, -1}).init("block.conv.weight_bias", {2}, {0.5f, 0});
  scopes(b.node("Conv", {"x", "block.conv.weight", "block.conv.weight_bias"}, {"c"}, "node_Conv_7"),
         "['', 'block', 'block.bn', '_native_batch_norm_legit_no_training']");
  pb::NodeProto& split = b.node("Split", {"c"}, {"s0", "s1"}, "node_Split_9");
  set_int(split, "axis", 1);
  set_int(split, "num_outputs", 2);
  scopes(b.node("Relu", {"s0"}, {"r0"}, "node_relu"), "['', 'block', 'block.act', 'relu']");
  scopes(b.node("Relu", {"s1"}, {"r1"}, "node_relu_1"), "['', 'block', 'block.act', 'relu_1']");
  pb::NodeProto& cat = b.node("Concat", {"r0", "r1"}, {"y"}, "node_cat");
  set_int(cat, "axis", 1);
  scopes(cat, "['', 'block', 'cat']");
  std::string printed;
  const ref::Tensor x{{1, 1, 2, 2}, {1, -2, 3, -4}};
  EXPECT_EQ(
      run_printed(b, "input conv2d slice_channels slice_channels relu relu concat", x, printed),
      (std::vector<float>{1.5f, 0, 3.5f, 0, 0, 2, 0, 4}));
  for (const char* name : {"%block.conv = conv2d", "param  block.conv.bias [2]",
                           "%block.act.slice_channels = ", "%block.act = relu",
                           "%block.act_1 = relu", "%block.concat = concat"}) {
    EXPECT_NE(printed.find(name), std::string::npos) << name << "\n" << printed;
  }
}

// The TorchScript-based exporter (torch 1.13) computes F.pad's pads with ConstantOfShape,
// Concat, Reshape, a reversing Slice, Transpose, Reshape and Cast: folded while compiling, the
// Pad is reached, and a reflection Pad is refused at the Pad itself (issue 32).
Builder pad_chain(const char* mode) {
  Builder b(17);
  b.input("x", {-1, 1, 2, 2}).output("y", 4);
  b.init_i64("pad", {2, 2, 1, 1}).init_i64("extension", {4}).init_i64("pairs", {-1, 2});
  b.init_i64("start", {-1}).init_i64("end", {INT64_MIN}).init_i64("axis0", {0});
  b.init_i64("step", {-1}).init_i64("flat", {-1});
  pb::NodeProto& zeros = b.node("ConstantOfShape", {"extension"}, {"z"});
  pb::AttributeProto* value = zeros.add_attribute();
  value->set_name("value");
  value->set_type(pb::AttributeProto::TENSOR);
  value->mutable_t()->set_data_type(pb::TensorProto::INT64);
  value->mutable_t()->add_dims(1);
  value->mutable_t()->add_int64_data(0);
  set_int(b.node("Concat", {"pad", "z"}, {"all"}), "axis", 0);
  b.node("Reshape", {"all", "pairs"}, {"rows"});
  b.node("Slice", {"rows", "start", "end", "axis0", "step"}, {"reversed"});
  set_ints(b.node("Transpose", {"reversed"}, {"columns"}), "perm", {1, 0});
  b.node("Reshape", {"columns", "flat"}, {"pads"});
  set_int(b.node("Cast", {"pads"}, {"pads64"}), "to", pb::TensorProto::INT64);
  set_string(b.node("Pad", {"x", "pads64"}, {"p"}, "/Pad"), "mode", mode);
  set_ints(b.node("AveragePool", {"p"}, {"y"}), "kernel_shape", {3, 5});
  return b;
}

TEST(OnnxNewer, TheTorchScriptExportersPadsAreFoldedIntoThePool) {
  std::string printed;
  const ref::Tensor x{{1, 1, 2, 2}, {1, 2, 3, 4}};
  run_printed(pad_chain("constant"), "input avgpool2d", x, printed);
  EXPECT_NE(printed.find("padding=1x2"), std::string::npos) << printed;  // (2, 2, 1, 1): W 2, H 1
  expect_refused(pad_chain("reflect"), "node '/Pad' (Pad, #7): mode 'reflect'");
}

// A file newer than libonnx's checker knows is checked by zoc, which says so.
TEST(OnnxNewer, ANewerFileIsCheckedByZocAndSaysSo) {
  Builder b = newer();
  b.input("x", {-1, 1, 2, 2}).output("y", 4);
  b.node("Relu", {"x"}, {"y"});
  test::TempDir dir;
  Diagnostics d;
  ASSERT_TRUE(load(b.save(dir), d)) << d.render();
  EXPECT_NE(d.render().find("note: the model is ONNX IR version 10 with opset 20, newer than the "
                            "checker of this zoc's libonnx 1.12.0 reads (IR 8, opset 17): zoc "
                            "checked it itself"),
            std::string::npos)
      << d.render();
}

}  // namespace
}  // namespace zoc
