// Tests of what training graphs add to the IR: nodes with several results (extra_outputs),
// non-batched and i32 values, pass-only attributes, and the helpers that must carry extras
// (printer, verifier, shape rules, DCE, rewrite). Inference graphs have none of these, which
// the other IR tests and the goldens cover.
#include <gtest/gtest.h>

#include "compiler/ir/printer.h"
#include "compiler/ir/rewrite.h"
#include "compiler/ir/shapes.h"
#include "compiler/ir/verify.h"
#include "compiler/passes/pipeline.h"
#include "tests/unit/test_util.h"

namespace zoc::ir {
namespace {

AttrValue int_attr(int64_t v) { return AttrValue{AttrKind::Int, v, {}, 0}; }
AttrValue bool_attr(bool v) { return AttrValue{AttrKind::Bool, v ? 1 : 0, {}, 0}; }

// input 3x4x4 -> batchnorm2d (training, with its saved statistics as an extra result) -> relu
Graph bn_graph(bool training, bool with_extra) {
  Graph g;
  g.name = "bn";
  Attrs in;
  in.set("channels", int_attr(3));
  in.set("height", int_attr(4));
  in.set("width", int_attr(4));
  const ValueId x = g.nodes[g.add_node(OpKind::Input, "input", {}, in, {"m.yaml", 1, 1})].output;
  Attrs bn = with_defaults(OpKind::BatchNorm2d, {});
  if (training) bn.set("training", bool_attr(true));
  const int32_t b = g.add_node(OpKind::BatchNorm2d, "bn", {x}, bn, {"m.yaml", 2, 5});
  if (with_extra) g.add_extra_output(b, "bn.saved");
  g.outputs = {g.nodes[g.add_node(OpKind::Relu, "relu", {g.nodes[b].output}, {}, {})].output};
  return g;
}

TEST(TensorTypes, BatchedNonBatchedAndLabels) {
  EXPECT_EQ((TensorType{DType::F32, Layout::NCHW, {3, 8, 8}}).str(), "Nx3x8x8 f32");
  EXPECT_EQ((TensorType{DType::F32, Layout::NC, {2, 4}, false}).str(), "2x4 f32");
  EXPECT_EQ((TensorType{DType::I32, Layout::NC, {}}).str(), "N i32");
  EXPECT_EQ((TensorType{DType::F32, Layout::NC, {}, false}).str(), "scalar f32");
  EXPECT_EQ((TensorType{DType::F32, Layout::NC, {2, 4}, false}).sample_numel(), 8);
  EXPECT_NE((TensorType{DType::F32, Layout::NC, {4}}),
            (TensorType{DType::F32, Layout::NC, {4}, false}));
}

TEST(ExtraResults, ShapeRuleTypesThemAndThePrinterListsThem) {
  Graph g = bn_graph(true, true);
  Diagnostics d;
  ASSERT_TRUE(infer_shapes(g, d)) << d.render();
  ASSERT_TRUE(verify(g, d)) << d.render();
  const ValueId saved = g.nodes[1].extra_outputs.at(0);
  EXPECT_EQ(g.values[saved].producer, 1);
  EXPECT_EQ(g.value_name(saved), "bn.saved");
  EXPECT_EQ(g.type(saved), (TensorType{DType::F32, Layout::NC, {2, 3}, false}));
  PrintOptions opts;
  opts.locations = false;
  const std::string text = print_graph(g, opts);
  EXPECT_NE(text.find("  %bn, %bn.saved = batchnorm2d(%input) {eps=1e-05, momentum=0.1, "
                      "training=true} : Nx3x4x4 f32, 2x3 f32\n"),
            std::string::npos)
      << text;
}

TEST(ExtraResults, InferenceGraphsPrintWithoutTheTrainingAttribute) {
  Graph g = bn_graph(false, false);
  Diagnostics d;
  ASSERT_TRUE(infer_shapes(g, d));
  EXPECT_EQ(print_graph(g).find("training"), std::string::npos);
  EXPECT_NE(print_graph(g).find("%bn = batchnorm2d(%input) {eps=1e-05, momentum=0.1} : "
                                "Nx3x4x4 f32"),
            std::string::npos);
}

TEST(ExtraResults, ShapeRulesCountThem) {
  Graph missing = bn_graph(true, false);
  Diagnostics d1;
  EXPECT_FALSE(infer_shapes(missing, d1));
  EXPECT_NE(d1.render().find("m.yaml:2:5: error: layer 'bn' (batchnorm2d): has 0 extra results, "
                             "expects 1"),
            std::string::npos)
      << d1.render();
  Graph extra = bn_graph(false, false);
  extra.add_extra_output(2, "relu.mask");
  Diagnostics d2;
  EXPECT_FALSE(infer_shapes(extra, d2));
  EXPECT_NE(d2.render().find("layer 'relu' (relu): has 1 extra results; the op defines one"),
            std::string::npos)
      << d2.render();
}

TEST(ExtraResults, VerifierChecksNamesLinksAndTypes) {
  Graph good = bn_graph(true, true);
  Diagnostics d;
  ASSERT_TRUE(infer_shapes(good, d));

  Graph dup = good;
  dup.values[dup.nodes[1].extra_outputs[0]].name = "input";
  Diagnostics d1;
  EXPECT_FALSE(verify(dup, d1));
  EXPECT_NE(d1.render().find("duplicate value name 'input'"), std::string::npos) << d1.render();

  Graph unlinked = good;
  unlinked.values[unlinked.nodes[1].extra_outputs[0]].producer = 0;
  Diagnostics d2;
  EXPECT_FALSE(verify(unlinked, d2));
  EXPECT_NE(d2.render().find("an extra result is not linked back"), std::string::npos);

  Graph untyped = good;
  untyped.values[untyped.nodes[1].extra_outputs[0]].type.reset();
  Diagnostics d3;
  EXPECT_FALSE(verify(untyped, d3));
  EXPECT_NE(d3.render().find("result '%bn.saved' has no type"), std::string::npos);

  Graph two_labels = good;
  for (const char* name : {"labels", "labels2"})
    two_labels.add_node(OpKind::Labels, name, {}, {}, {});
  Diagnostics d4;
  ASSERT_TRUE(infer_shapes(two_labels, d4));
  EXPECT_FALSE(verify(two_labels, d4));
  EXPECT_NE(d4.render().find("at most one labels node, found 2"), std::string::npos);
}

// A node stays while any of its results is used; renumbering keeps extras linked.
TEST(ExtraResults, DeadCodeAndRenumberingCarryThem) {
  Graph g = bn_graph(true, true);
  Diagnostics d;
  ASSERT_TRUE(infer_shapes(g, d));
  g.outputs = {g.nodes[1].extra_outputs[0]};  // only the saved statistics
  ASSERT_TRUE(passes::eliminate_dead_code(g, d));
  ASSERT_EQ(g.nodes.size(), 2u);  // the relu went
  const ValueId saved = g.nodes[1].extra_outputs.at(0);
  EXPECT_EQ(g.outputs, std::vector<ValueId>{saved});
  EXPECT_EQ(g.values[saved].producer, 1);
  EXPECT_EQ(g.value_name(saved), "bn.saved");
  EXPECT_TRUE(verify(g, d)) << d.render();
}

TEST(PassAttributes, ModelFilesMayNotSetThem) {
  test::TempDir dir;
  Diagnostics d;
  auto g = test::load(dir.write("m.yaml", R"(zoc: 1
input: {channels: 1, height: 4, width: 4}
layers:
  - bn: {op: batchnorm2d, training: true}
)"),
                      d);
  EXPECT_FALSE(g);
  EXPECT_NE(d.render().find("unknown attribute 'training' for batchnorm2d"), std::string::npos)
      << d.render();
  EXPECT_EQ(d.render().find("did you mean"), std::string::npos) << d.render();
}

TEST(ParamCounts, CountEachNameOnce) {
  Graph g = bn_graph(false, false);
  Diagnostics d;
  ASSERT_TRUE(infer_shapes(g, d));
  const int64_t trainable = g.trainable_param_count(), buffers = g.buffer_count();
  g.nodes[2].params = g.nodes[1].params;  // as a backward node lists its layer's
  EXPECT_EQ(g.trainable_param_count(), trainable);
  EXPECT_EQ(g.buffer_count(), buffers);
}

}  // namespace
}  // namespace zoc::ir
