// Tests of the inference passes: the structure they produce, and that the graph computes the
// same function before and after (reference interpreter, weights with non-trivial BN stats).
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

#include "compiler/backend/reference/interpreter.h"
#include "compiler/ir/activation_params.h"
#include "compiler/lower/memory_plan.h"
#include "compiler/passes/pipeline.h"
#include "compiler/weights/weights.h"
#include "tests/unit/test_util.h"

namespace zoc {
namespace {

using test::repo_path;

ir::Graph load(const std::string& model,
               std::vector<std::pair<std::string, std::string>> sets = {}) {
  Diagnostics d;
  auto g = test::load(repo_path("models/" + model + ".yaml"), d, std::move(sets));
  EXPECT_TRUE(g) << d.render();
  return *g;
}

// The model after the optimization pipeline (what the memory planner plans).
ir::Graph optimized(const std::string& model) {
  ir::Graph g = load(model);
  Diagnostics d;
  EXPECT_TRUE(passes::run_pipeline(g, d)) << d.render();
  return g;
}

int count(const ir::Graph& g, ir::OpKind op) {
  int n = 0;
  for (const ir::Node& node : g.nodes) n += node.op == op;
  return n;
}

// Seeded weights with BN statistics far from the identity, so folding really changes numbers.
Weights weights_with_random_bn(const ir::Graph& g) {
  Weights w = init_weights(g, 11);
  uint32_t state = 12345;
  auto next = [&] {
    state = state * 1664525u + 1013904223u;
    return static_cast<float>(state >> 8) / 16777216.0f;  // [0, 1)
  };
  for (const ir::Node& n : g.nodes) {
    for (const ir::ParamSpec& p : n.params) {
      if (p.role == ir::ParamRole::kBnWeight || p.role == ir::ParamRole::kBnVar) {
        for (float& v : w.tensors[p.name]) v = 0.5f + next();
      } else if (p.role == ir::ParamRole::kBnBias || p.role == ir::ParamRole::kBnMean) {
        for (float& v : w.tensors[p.name]) v = 0.2f * (next() - 0.5f);
      }
    }
  }
  return w;
}

double rel_l2(const std::vector<float>& a, const std::vector<float>& b) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    num += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
    den += double(b[i]) * b[i];
  }
  return std::sqrt(num / den);
}

ref::Tensor random_input(const ir::Graph& g, int64_t batch) {
  const auto& dims = g.type(g.nodes.front().output).dims;
  ref::Tensor x{{batch, dims[0], dims[1], dims[2]}, {}};
  x.data.resize(static_cast<size_t>(batch * dims[0] * dims[1] * dims[2]));
  for (size_t i = 0; i < x.data.size(); ++i) x.data[i] = std::sin(0.731f * float(i) + 0.3f);
  return x;
}

TEST(Passes, ResNet50FusesEveryBnAddAndRelu) {
  ir::Graph g = load("resnet50");
  Diagnostics d;
  passes::PassOptions opts;
  opts.verify_each = true;
  ASSERT_TRUE(passes::run_pipeline(g, d, opts)) << d.render();
  EXPECT_EQ(count(g, ir::OpKind::FusedConv2d), 53);
  EXPECT_EQ(count(g, ir::OpKind::Conv2d), 0);
  EXPECT_EQ(count(g, ir::OpKind::BatchNorm2d), 0);
  EXPECT_EQ(count(g, ir::OpKind::Add), 0);
  EXPECT_EQ(count(g, ir::OpKind::Relu), 0);
  EXPECT_EQ(g.nodes.size(), 58u);  // input, 53 convs, maxpool, avgpool, flatten, fc
  EXPECT_EQ(g.trainable_param_count(), 25557032);
  const ir::Node* c3 = g.find_node("layer1.0.conv3");
  ASSERT_NE(c3, nullptr);
  EXPECT_EQ(c3->fused_from, (std::vector<std::string>{"layer1.0.conv3", "layer1.0.bn3",
                                                      "layer1.0.add", "layer1.0.relu3"}));
  ASSERT_EQ(c3->inputs.size(), 2u);
  EXPECT_EQ(g.producer(c3->inputs[1]).name, "layer1.0.downsample.0");
  EXPECT_EQ(c3->attrs.i("activation"), 1);
  // The residual's producer now comes first.
  EXPECT_LT(g.values[c3->inputs[1]].producer, g.values[c3->output].producer);
  // The projection shortcut has its BN folded and no activation.
  const ir::Node* ds = g.find_node("layer1.0.downsample.0");
  EXPECT_EQ(ds->attrs.i("activation"), 0);
  EXPECT_TRUE(ds->attrs.has("bn_eps"));
  // Folded BN tensors keep their own names.
  bool has_bn_param = false;
  for (const ir::ParamSpec& p : ds->params)
    has_bn_param |= p.name == "layer1.0.downsample.1.running_var";
  EXPECT_TRUE(has_bn_param);
}

TEST(Passes, PreserveResNet18Numerics) {
  ir::Graph before = load("resnet18", {{"resolution", "32"}, {"num_classes", "10"}});
  const Weights w = weights_with_random_bn(before);
  const ref::Tensor x = random_input(before, 2);
  auto out_before = ref::run(before, w, x);
  ASSERT_TRUE(out_before.ok()) << out_before.error().message;
  ir::Graph after = before;
  Diagnostics d;
  ASSERT_TRUE(passes::run_pipeline(after, d)) << d.render();
  auto out_after = ref::run(after, w, x);
  ASSERT_TRUE(out_after.ok()) << out_after.error().message;
  EXPECT_LE(rel_l2((*out_after)[0].data, (*out_before)[0].data), 1e-6);
  EXPECT_LT(after.nodes.size(), before.nodes.size());
}

// Every activation fuses into every conv: a depthwise one (zoc's own kernel applies it) and an
// ordinary one (cuDNN's graph-API epilogue, or an in-place kernel after it). The function is
// unchanged.
TEST(Passes, ConvsFuseAnyActivation) {
  Diagnostics d;
  for (const char* model : {"depthwise_layers", "epilogue_layers"}) {
    SCOPED_TRACE(model);
    auto loaded = test::load(repo_path(std::string("tests/backend/") + model + ".yaml"), d, {});
    ASSERT_TRUE(loaded) << d.render();
    ir::Graph g = *loaded;
    const Weights w = weights_with_random_bn(g);
    const ref::Tensor x = random_input(g, 2);
    auto before = ref::run(g, w, x);
    ASSERT_TRUE(before.ok()) << before.error().message;
    ASSERT_TRUE(passes::run_pipeline(g, d)) << d.render();
    for (const ir::FusedActivation& a : ir::kFusedActivations) {
      EXPECT_EQ(count(g, a.op), 0) << ir::op_info(a.op).name;
    }
    EXPECT_EQ(count(g, ir::OpKind::Add), 0);
    EXPECT_EQ(count(g, ir::OpKind::BatchNorm2d), 0);
    auto after = ref::run(g, w, x);
    ASSERT_TRUE(after.ok()) << after.error().message;
    EXPECT_LE(rel_l2((*after)[0].data, (*before)[0].data), 1e-6);
  }
  ir::Graph dw = *test::load(repo_path("tests/backend/depthwise_layers.yaml"), d, {});
  ASSERT_TRUE(passes::run_pipeline(dw, d)) << d.render();
  const ir::Node* dw2 = dw.find_node("dw2");
  ASSERT_NE(dw2, nullptr);
  EXPECT_EQ(dw2->attrs.i("activation"), ir::fused_activation_code(ir::OpKind::Hardtanh));
  EXPECT_EQ(dw2->attrs.f("min_val"), 0.0);
  EXPECT_EQ(dw2->attrs.f("max_val"), 6.0);
  EXPECT_EQ(dw.find_node("dw1")->attrs.i("activation"), 1);  // ReLU keeps its code
  EXPECT_EQ(dw.find_node("dw8")->attrs.i("activation"),
            ir::fused_activation_code(ir::OpKind::Silu));
  ir::Graph ep = *test::load(repo_path("tests/backend/epilogue_layers.yaml"), d, {});
  ASSERT_TRUE(passes::run_pipeline(ep, d)) << d.render();
  const ir::Node* c2 = ep.find_node("c2");
  ASSERT_NE(c2, nullptr);
  EXPECT_EQ(c2->attrs.f("min_val"), -0.5);
  EXPECT_EQ(c2->attrs.f("max_val"), 1.5);
  EXPECT_EQ(ep.find_node("c4")->inputs.size(), 2u);  // residual, then GELU
  EXPECT_EQ(ep.find_node("c4")->attrs.i("activation"), ir::fused_activation_code(ir::OpKind::Gelu));
}

TEST(Passes, LeNetDropoutRemovedAndReluFused) {
  ir::Graph g = load("lenet");
  const Weights w = init_weights(g, 3);
  const ref::Tensor x = random_input(g, 3);
  auto before = ref::run(g, w, x);
  Diagnostics d;
  ASSERT_TRUE(passes::run_pipeline(g, d)) << d.render();
  EXPECT_EQ(count(g, ir::OpKind::Dropout), 0);
  EXPECT_EQ(count(g, ir::OpKind::FusedConv2d), 2);
  EXPECT_EQ(count(g, ir::OpKind::Relu), 1);  // after fc1: no conv to fuse into
  auto after = ref::run(g, w, x);
  ASSERT_TRUE(before.ok() && after.ok());
  EXPECT_LE(rel_l2((*after)[0].data, (*before)[0].data), 1e-6);
}

TEST(Passes, BnWithTwoUsersIsNotFolded) {
  test::TempDir dir;
  const std::string path = dir.write("m.yaml", R"(zoc: 1
input: {channels: 2, height: 5, width: 5}
layers:
  - conv: {op: conv2d, out_channels: 3, kernel: 3, padding: 1}
  - bn: {op: batchnorm2d}
  - also: {op: relu, input: conv}
  - sum: {op: add, inputs: [bn, also]}
)");
  Diagnostics d;
  auto g = test::load(path, d);
  ASSERT_TRUE(g) << d.render();
  const Weights w = weights_with_random_bn(*g);
  const ref::Tensor x = random_input(*g, 2);
  auto before = ref::run(*g, w, x);
  ASSERT_TRUE(passes::run_pipeline(*g, d)) << d.render();
  EXPECT_EQ(count(*g, ir::OpKind::BatchNorm2d), 1);  // the conv's output is also read raw
  auto after = ref::run(*g, w, x);
  ASSERT_TRUE(before.ok() && after.ok());
  EXPECT_LE(rel_l2((*after)[0].data, (*before)[0].data), 1e-6);
}

TEST(Passes, PrintIrAfterAndUnknownPass) {
  ir::Graph g = load("lenet");
  std::ostringstream out;
  passes::PassOptions opts;
  opts.print_after = "fold-batchnorm";
  opts.print_to = &out;
  Diagnostics d;
  ASSERT_TRUE(passes::run_pipeline(g, d, opts));
  EXPECT_NE(out.str().find("// ----- IR after fold-batchnorm -----"), std::string::npos);
  EXPECT_EQ(out.str().find("IR after dce"), std::string::npos);

  opts.print_after = "fold-bn";
  Diagnostics d2;
  EXPECT_FALSE(passes::run_pipeline(g, d2, opts));
  EXPECT_NE(d2.render().find("no pass named 'fold-bn'"), std::string::npos);
}

TEST(MemoryPlan, LiveValuesNeverOverlapAndSharingHelps) {
  const ir::Graph g = optimized("resnet50");
  for (bool external : {true, false}) {
    lower::MemoryPlanOptions o;
    o.element_bytes = 2;
    o.external_input = external;
    const lower::MemoryPlan plan = lower::plan_memory(g, o);
    // Lifetimes from the node order; check every pair of placed values.
    std::vector<int64_t> first(g.values.size(), -1), last(g.values.size(), -1);
    auto root = [&](ir::ValueId v) {
      return plan.slots[v].alias_of == ir::kNoValue ? v : plan.slots[v].alias_of;
    };
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      const ir::ValueId r = root(g.nodes[i].output);
      if (first[r] < 0) first[r] = int64_t(i);
      last[r] = std::max(last[r], int64_t(i));
      for (ir::ValueId v : g.nodes[i].inputs) last[root(v)] = std::max(last[root(v)], int64_t(i));
    }
    for (ir::ValueId v : g.outputs) last[root(v)] = int64_t(g.nodes.size());
    for (size_t a = 0; a < g.values.size(); ++a) {
      const auto& sa = plan.slots[a];
      if (sa.offset < 0 || sa.alias_of != ir::kNoValue) continue;
      EXPECT_EQ(sa.offset % lower::MemoryPlan::kAlignment, 0);
      EXPECT_LE(sa.offset + sa.bytes, plan.arena_bytes_per_sample);
      for (size_t b = a + 1; b < g.values.size(); ++b) {
        const auto& sb = plan.slots[b];
        if (sb.offset < 0 || sb.alias_of != ir::kNoValue) continue;
        const bool live_together = first[a] <= last[b] && first[b] <= last[a];
        const bool overlap = sa.offset < sb.offset + sb.bytes && sb.offset < sa.offset + sa.bytes;
        EXPECT_FALSE(live_together && overlap) << g.producer(a).name << " / " << g.producer(b).name;
      }
    }
    EXPECT_EQ(plan.slots[g.nodes.front().output].offset < 0, external);
    // ResNet-50 needs ~3.4 MiB per fp16 sample when shared, ~22 MiB if every value had its own.
    EXPECT_LT(plan.arena_bytes_per_sample * 4, plan.unplanned_bytes_per_sample);
  }
}

TEST(MemoryPlan, PaddedInputGetsRoomForItsStoredChannels) {
  const ir::Graph g = optimized("resnet50");
  lower::MemoryPlanOptions o;
  o.element_bytes = 2;
  o.external_input = false;
  o.input_channels_stored = 4;  // 3 x 224 x 224 stored as 4 channels
  const lower::MemoryPlan plan = lower::plan_memory(g, o);
  EXPECT_EQ(plan.slots[g.nodes.front().output].bytes, 4 * 224 * 224 * 2);
  o.input_channels_stored = 0;
  EXPECT_EQ(lower::plan_memory(g, o).slots[g.nodes.front().output].bytes, 3 * 224 * 224 * 2);
}

// A value nobody writes (a trainer's add done by the activation after it) gets no slot and no
// bytes of the arena.
TEST(MemoryPlan, UnstoredValuesTakeNoSlot) {
  const ir::Graph g = optimized("resnet50");
  lower::MemoryPlanOptions o;
  o.element_bytes = 2;
  const lower::MemoryPlan all = lower::plan_memory(g, o);
  const ir::ValueId v = g.nodes[g.nodes.size() / 2].output;
  ASSERT_GE(all.slots[v].offset, 0);
  o.unstored.insert(v);
  const lower::MemoryPlan plan = lower::plan_memory(g, o);
  EXPECT_LT(plan.slots[v].offset, 0);
  EXPECT_EQ(plan.unplanned_bytes_per_sample + all.slots[v].bytes, all.unplanned_bytes_per_sample);
}

}  // namespace
}  // namespace zoc
