// Tests of the IR: the op table, shape rules, the verifier and the printer.
#include <gtest/gtest.h>

#include <set>

#include "compiler/ir/graph.h"
#include "compiler/ir/printer.h"
#include "compiler/ir/shapes.h"
#include "compiler/ir/verify.h"

namespace zoc::ir {
namespace {

AttrValue int_attr(int64_t v) { return AttrValue{AttrKind::Int, v, {}, 0}; }
AttrValue pair_attr(int64_t h, int64_t w) { return AttrValue{AttrKind::Pair, 0, {h, w}, 0}; }
AttrValue bool_attr(bool v) { return AttrValue{AttrKind::Bool, v ? 1 : 0, {}, 0}; }

// input 3x8x8 -> conv 4 (3x3, pad 1, bias) -> relu -> global_avgpool -> flatten -> linear 5
Graph small_graph() {
  Graph g;
  g.name = "small";
  Attrs in;
  in.set("channels", int_attr(3));
  in.set("height", int_attr(8));
  in.set("width", int_attr(8));
  const ValueId x = g.nodes[g.add_node(OpKind::Input, "input", {}, in, {"m.yaml", 1, 1})].output;
  Attrs conv;
  conv.set("out_channels", int_attr(4));
  conv.set("kernel", pair_attr(3, 3));
  conv.set("stride", pair_attr(1, 1));
  conv.set("padding", pair_attr(1, 1));
  conv.set("dilation", pair_attr(1, 1));
  conv.set("groups", int_attr(1));
  conv.set("bias", bool_attr(true));
  const ValueId c = g.nodes[g.add_node(OpKind::Conv2d, "conv", {x}, conv, {"m.yaml", 2, 5})].output;
  const ValueId r = g.nodes[g.add_node(OpKind::Relu, "relu", {c}, {}, {"m.yaml", 3, 5})].output;
  const ValueId p = g.nodes[g.add_node(OpKind::GlobalAvgPool, "pool", {r}, {}, {})].output;
  const ValueId f = g.nodes[g.add_node(OpKind::Flatten, "flat", {p}, {}, {})].output;
  Attrs fc;
  fc.set("out_features", int_attr(5));
  fc.set("bias", bool_attr(true));
  g.outputs = {g.nodes[g.add_node(OpKind::Linear, "fc", {f}, fc, {})].output};
  return g;
}

TEST(OpTable, NamesRoundTripAndAreUnique) {
  std::set<std::string_view> names;
  for (const OpInfo& info : all_ops()) {
    EXPECT_TRUE(names.insert(info.name).second) << info.name;
    EXPECT_EQ(op_from_name(info.name), info.kind);
    EXPECT_EQ(&op_info(info.kind), &info);
    EXPECT_LE(info.min_inputs, info.max_inputs);
    for (const AttrSpec& a : info.attrs) {
      EXPECT_EQ(find_attr(info.kind, a.name), &a);
      EXPECT_LE(a.min, a.max) << info.name << "." << a.name;
    }
  }
  EXPECT_FALSE(op_from_name("prelu").has_value());
  EXPECT_EQ(find_attr(OpKind::Conv2d, "strides"), nullptr);
}

TEST(Shapes, OutputSizeFormulasMatchPyTorch) {
  EXPECT_EQ(conv_output_size(224, 7, 2, 3, 1), 112);
  EXPECT_EQ(conv_output_size(56, 3, 1, 1, 1), 56);
  EXPECT_EQ(conv_output_size(10, 3, 1, 0, 2), 6);
  EXPECT_EQ(conv_output_size(2, 5, 1, 0, 1), std::nullopt);
  EXPECT_EQ(pool_output_size(112, 3, 2, 1, 1, false), 56);
  // ceil_mode keeps the partial window: (6 - 3) / 2 rounded up + 1 = 3
  EXPECT_EQ(pool_output_size(6, 3, 2, 0, 1, true), 3);
  EXPECT_EQ(pool_output_size(6, 3, 2, 0, 1, false), 2);
  // ...but not one that would start in the right padding (values from torch's max_pool2d).
  EXPECT_EQ(pool_output_size(5, 2, 2, 1, 1, true), 3);
  EXPECT_EQ(pool_output_size(4, 2, 2, 1, 1, true), 3);
  EXPECT_EQ(pool_output_size(1, 3, 1, 0, 1, false), std::nullopt);
  EXPECT_EQ(conv_output_size(int64_t{1} << 40, 3, 1, int64_t{1} << 62, 1), std::nullopt);
}

TEST(Shapes, InfersTypesAndParams) {
  Graph g = small_graph();
  Diagnostics d;
  ASSERT_TRUE(infer_shapes(g, d)) << d.render();
  EXPECT_EQ(g.type(g.nodes[1].output).dims, (std::vector<int64_t>{4, 8, 8}));
  EXPECT_EQ(g.type(g.nodes[3].output).dims, (std::vector<int64_t>{4, 1, 1}));
  EXPECT_EQ(g.type(g.outputs[0]).dims, (std::vector<int64_t>{5}));
  ASSERT_EQ(g.nodes[1].params.size(), 2u);
  EXPECT_EQ(g.nodes[1].params[0].name, "conv.weight");
  EXPECT_EQ(g.nodes[1].params[0].shape, (std::vector<int64_t>{4, 3, 3, 3}));
  EXPECT_EQ(g.trainable_param_count(), 4 * 27 + 4 + 5 * 4 + 5);
  EXPECT_TRUE(verify(g, d)) << d.render();
}

TEST(Shapes, GroupsMustDivideChannelsAndErrorIsLocated) {
  Graph g = small_graph();
  g.nodes[1].attrs.set("groups", int_attr(2));  // 3 input channels
  Diagnostics d;
  EXPECT_FALSE(infer_shapes(g, d));
  EXPECT_NE(d.render().find("m.yaml:2:5: error: layer 'conv' (conv2d): groups 2 does not divide "
                            "the 3 input channels"),
            std::string::npos)
      << d.render();
  // One error (4 output channels are divisible by 2), and it does not cascade into the
  // layers after the conv.
  EXPECT_EQ(d.error_count(), 1u) << d.render();
}

TEST(Verifier, AcceptsGoodGraphAndRejectsBrokenOnes) {
  Graph good = small_graph();
  Diagnostics d;
  ASSERT_TRUE(infer_shapes(good, d));
  ASSERT_TRUE(verify(good, d));

  Graph dup = good;
  dup.nodes[2].name = "conv";
  Diagnostics d1;
  EXPECT_FALSE(verify(dup, d1));
  EXPECT_NE(d1.render().find("duplicate layer name"), std::string::npos);

  Graph order = good;
  order.nodes[1].inputs = {order.nodes[2].output};  // uses a later value
  Diagnostics d2;
  EXPECT_FALSE(verify(order, d2));
  EXPECT_NE(d2.render().find("not produced by an earlier node"), std::string::npos);

  Graph arity = good;
  arity.nodes[2].inputs.push_back(arity.nodes[0].output);  // relu with 2 inputs
  Diagnostics d3;
  EXPECT_FALSE(verify(arity, d3));
  EXPECT_NE(d3.render().find("has 2 inputs, expects 1..1"), std::string::npos);

  Graph attr = good;
  attr.nodes[1].attrs.set("stride", pair_attr(0, 1));
  Diagnostics d4;
  EXPECT_FALSE(verify(attr, d4));
  EXPECT_NE(d4.render().find("attribute 'stride' out of range"), std::string::npos);

  Graph untyped = small_graph();  // shapes not inferred
  Diagnostics d5;
  EXPECT_FALSE(verify(untyped, d5));
  EXPECT_NE(d5.render().find("output has no type"), std::string::npos);

  Graph no_out = good;
  no_out.outputs.clear();
  Diagnostics d6;
  EXPECT_FALSE(verify(no_out, d6));
  EXPECT_NE(d6.render().find("no outputs"), std::string::npos);
}

// Issue 36: a layer called twice. Its second node reads the first's tensors (weights_of), so
// both declare "conv.weight"; a node that would declare it otherwise is refused.
TEST(Verifier, SharedLayerDeclaresItsOwnersTensorsAlike) {
  Graph g = small_graph();
  g.nodes[1].attrs.set("out_channels", int_attr(3));  // 3 -> 3, so that it can run again
  g.add_node(OpKind::Conv2d, "conv_1", {g.nodes[1].output}, g.nodes[1].attrs, {});
  Node again = g.nodes.back();  // appended last: moved to run right after conv, before relu
  again.weights_of = "conv";
  g.nodes.pop_back();
  g.nodes.insert(g.nodes.begin() + 2, again);
  g.nodes[3].inputs = {again.output};
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    for (ValueId v : Graph::results(g.nodes[k])) g.values[v].producer = static_cast<int32_t>(k);
  }
  Diagnostics d;
  ASSERT_TRUE(infer_shapes(g, d)) << d.render();
  ASSERT_TRUE(verify(g, d)) << d.render();
  const Node* second = g.find_node("conv_1");
  ASSERT_NE(second, nullptr);
  EXPECT_EQ(second->params[0].name, "conv.weight");
  EXPECT_EQ(second->params[1].name, "conv.bias");
  EXPECT_EQ(g.trainable_param_count(), 3 * 27 + 3 + 5 * 3 + 5);  // conv's counted once
  EXPECT_NE(print_graph(g).find("[weights of conv]"), std::string::npos) << print_graph(g);

  Graph unlike = g;
  for (Node& n : unlike.nodes) {
    if (n.name == "conv_1") n.params[0].shape = {3, 3, 1, 1};
  }
  Diagnostics d1;
  EXPECT_FALSE(verify(unlike, d1));
  EXPECT_NE(d1.render().find("layer 'conv_1' (conv2d): declares tensor 'conv.weight' unlike "
                             "layer 'conv' does"),
            std::string::npos)
      << d1.render();

  Graph self = g;
  for (Node& n : self.nodes) {
    if (n.name == "conv_1") n.weights_of = "conv_1";
  }
  Diagnostics d2;
  EXPECT_FALSE(verify(self, d2));
  EXPECT_NE(d2.render().find("uses the weights of 'conv_1', which is not another layer"),
            std::string::npos)
      << d2.render();
}

TEST(Printer, ReadableAndStable) {
  Graph g = small_graph();
  Diagnostics d;
  ASSERT_TRUE(infer_shapes(g, d));
  PrintOptions opts;
  opts.locations = false;
  const std::string text = print_graph(g, opts);
  EXPECT_NE(text.find("%conv = conv2d(%input) {out_channels=4, kernel=3x3, stride=1x1, "
                      "padding=1x1, dilation=1x1, groups=1, bias=true} : Nx4x8x8 f32"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("param  conv.weight [4x3x3x3]"), std::string::npos) << text;
  EXPECT_NE(text.find("return %fc"), std::string::npos);
  EXPECT_NE(text.find("6 nodes, 137 trainable parameters"), std::string::npos) << text;
  EXPECT_EQ(text, print_graph(g, opts));
  EXPECT_NE(print_graph(g).find("# m.yaml:2:5"), std::string::npos);
}

}  // namespace
}  // namespace zoc::ir
