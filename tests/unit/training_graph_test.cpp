// Tests of the training graph (passes/build_training_graph.cpp): its structure for LeNet and
// ResNet-18 (node kinds and counts, one gradient and one sgd node per trainable parameter, an
// add where a value has several users), what it refuses, and how the memory planner places its
// non-batched values. Its numbers are training_interpreter_test.cpp's and tests/train's.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <sstream>

#include "compiler/ir/printer.h"
#include "compiler/lower/memory_plan.h"
#include "compiler/passes/pipeline.h"
#include "tests/unit/test_util.h"

namespace zoc {
namespace {

using ir::OpKind;

ir::Graph load(const std::string& model,
               std::vector<std::pair<std::string, std::string>> sets = {}) {
  Diagnostics d;
  auto g = test::load(test::repo_path("models/" + model + ".yaml"), d, std::move(sets));
  EXPECT_TRUE(g) << d.render();
  return *g;
}

// A model written inline (YAML), loaded from a temporary file.
ir::Graph load_text(const std::string& yaml) {
  test::TempDir dir;
  Diagnostics d;
  auto g = test::load(dir.write("m.yaml", yaml), d);
  EXPECT_TRUE(g) << d.render();
  return g ? *g : ir::Graph{};
}

ir::Graph training(const ir::Graph& model, bool optimizer = true) {
  Diagnostics d;
  auto t = passes::build_training_graph(model, {.optimizer = optimizer}, d);
  EXPECT_TRUE(t) << d.render();
  return t ? *t : ir::Graph{};
}

std::map<OpKind, int> op_counts(const ir::Graph& g) {
  std::map<OpKind, int> counts;
  for (const ir::Node& n : g.nodes) ++counts[n.op];
  return counts;
}

// Every trainable parameter of the model: exactly one grad.<name> result and one sgd node
// updating it, in state_dict order; the graph returns the loss, the logits, the gradients and
// the updates.
void expect_one_gradient_and_update_per_parameter(const ir::Graph& model, const ir::Graph& t) {
  std::vector<std::string> params;
  for (const ir::Node& n : model.nodes) {
    for (const ir::ParamSpec& p : n.params) {
      if (p.trainable) params.push_back(p.name);
    }
  }
  std::map<std::string, int> grads, updates;
  std::vector<std::string> sgd_order;
  for (const ir::Node& n : t.nodes) {
    for (ir::ValueId v : n.extra_outputs) {
      if (t.value_name(v).rfind("grad.", 0) == 0) ++grads[t.value_name(v).substr(5)];
    }
    if (n.op == OpKind::Sgd) {
      ++updates[n.origin];
      sgd_order.push_back(n.origin);
      EXPECT_EQ(n.name, "updated." + n.origin);
      EXPECT_EQ(t.value_name(n.inputs[0]), "grad." + n.origin);
    }
  }
  EXPECT_EQ(sgd_order, params);
  for (const std::string& p : params) {
    EXPECT_EQ(grads[p], 1) << p;
    EXPECT_EQ(updates[p], 1) << p;
  }
  EXPECT_EQ(grads.size(), params.size());
  ASSERT_EQ(t.outputs.size(), 2 + 2 * params.size());
  EXPECT_EQ(t.value_name(t.outputs[0]), "loss");
  for (size_t k = 0; k < params.size(); ++k) {
    EXPECT_EQ(t.value_name(t.outputs[2 + k]), "grad." + params[k]);
    EXPECT_EQ(t.value_name(t.outputs[2 + params.size() + k]), "updated." + params[k]);
  }
}

TEST(TrainingGraph, LeNet) {
  const ir::Graph model = load("lenet");
  const ir::Graph t = training(model);
  std::map<OpKind, int> want = {
      {OpKind::Input, 1},       {OpKind::Labels, 1},        {OpKind::Conv2d, 2},
      {OpKind::Relu, 3},        {OpKind::MaxPool2d, 2},     {OpKind::Flatten, 1},
      {OpKind::Linear, 2},      {OpKind::Dropout, 1},       {OpKind::SoftmaxCrossEntropy, 1},
      {OpKind::LinearGrad, 2},  {OpKind::DropoutGrad, 1},   {OpKind::ReluGrad, 3},
      {OpKind::FlattenGrad, 1}, {OpKind::MaxPool2dGrad, 2}, {OpKind::Conv2dGrad, 2},
      {OpKind::Sgd, 8}};
  EXPECT_EQ(op_counts(t), want);
  // In order: the batch, the forward, the loss, the backward in reverse, the optimizer.
  EXPECT_EQ(t.nodes[0].op, OpKind::Input);
  EXPECT_EQ(t.nodes[1].op, OpKind::Labels);
  EXPECT_EQ(t.nodes[13].op, OpKind::SoftmaxCrossEntropy);
  EXPECT_EQ(t.value_name(t.outputs[1]), "fc2");
  EXPECT_TRUE(t.find_node("dropout")->attrs.flag("training"));
  // Backward nodes stand for their layer and point at its line.
  const ir::Node* first_conv = t.find_node("d.input.via.conv1");
  ASSERT_NE(first_conv, nullptr);
  EXPECT_EQ(first_conv->origin, "conv1");
  EXPECT_EQ(first_conv->loc.str(), model.find_node("conv1")->loc.str());
  EXPECT_EQ(t.find_node("d.pool1")->op, OpKind::Conv2dGrad);
  // Without the optimizer: the same graph up to the gradients.
  const ir::Graph no_sgd = training(model, false);
  EXPECT_EQ(no_sgd.nodes.size(), t.nodes.size() - 8);
  EXPECT_EQ(op_counts(no_sgd).count(OpKind::Sgd), 0u);
  EXPECT_EQ(no_sgd.outputs.size(), 2u + 8u);
  expect_one_gradient_and_update_per_parameter(model, t);
}

// Residual blocks: the block input feeds conv1 and the shortcut, so its gradient is the sum of
// two contributions; BatchNorm runs in training mode and saves its statistics.
TEST(TrainingGraph, ResNet18SumsResidualGradientsAndSavesBnStatistics) {
  const ir::Graph model = load("resnet18", {{"resolution", "32"}, {"num_classes", "10"}});
  const ir::Graph t = training(model);
  std::map<OpKind, int> counts = op_counts(t);
  EXPECT_EQ(counts[OpKind::BatchNorm2d], 20);
  EXPECT_EQ(counts[OpKind::BatchNorm2dGrad], 20);
  EXPECT_EQ(counts[OpKind::Conv2dGrad], 20);
  EXPECT_EQ(counts[OpKind::Add], 8 + 8);  // the residual adds, and one gradient sum per block
  for (const ir::Node& n : t.nodes) {
    if (n.op == OpKind::BatchNorm2d) {
      EXPECT_TRUE(n.attrs.flag("training")) << n.name;
      ASSERT_EQ(n.extra_outputs.size(), 1u);
      EXPECT_EQ(t.value_name(n.extra_outputs[0]), n.name + ".saved");
      EXPECT_FALSE(t.type(n.extra_outputs[0]).batched);
    }
  }
  // layer1.0's input is maxpool's output: its gradient is conv1's and the shortcut's summed.
  const ir::Node* sum = t.find_node("d.maxpool");
  ASSERT_NE(sum, nullptr);
  EXPECT_EQ(sum->op, OpKind::Add);
  EXPECT_EQ(t.value_name(sum->inputs[0]), "d.layer1.0.add");  // the shortcut's, first (later user)
  EXPECT_EQ(t.value_name(sum->inputs[1]), "d.maxpool.via.layer1.0.conv1");
  expect_one_gradient_and_update_per_parameter(model, t);
}

TEST(TrainingGraph, ConcatAndAnInnerSoftmax) {
  const ir::Graph model = load_text(R"(zoc: 1
name: branches
input: {channels: 2, height: 4, width: 4}
layers:
  - a: {op: conv2d, out_channels: 3, kernel: 1}
  - b: {op: conv2d, out_channels: 5, kernel: 1, input: input}
  - cat: {op: concat, inputs: [a, b]}
  - gap: {op: global_avgpool}
  - flat: {op: flatten}
  - soft: {op: softmax}
  - fc: {op: linear, out_features: 4}
  - prob: {op: softmax}
)");
  const ir::Graph t = training(model);
  const ir::Node* a = t.find_node("d.a");
  const ir::Node* b = t.find_node("d.b");
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->op, OpKind::SliceChannels);
  EXPECT_EQ(a->attrs.i("start"), 0);
  EXPECT_EQ(a->attrs.i("count"), 3);
  EXPECT_EQ(b->attrs.i("start"), 3);
  EXPECT_EQ(b->attrs.i("count"), 5);
  EXPECT_EQ(t.find_node("d.flat")->op, OpKind::SoftmaxGrad);
  EXPECT_EQ(t.find_node("prob"), nullptr);  // the final softmax: the loss reads its input
  EXPECT_EQ(t.value_name(t.outputs[1]), "fc");
}

// A classifier exported for inference with its class index last (argmax over softmax): training
// leaves both out, and the loss reads the logits.
TEST(TrainingGraph, AFinalArgmaxAndTheSoftmaxUnderItAreLeftOut) {
  const ir::Graph model = load_text(R"(zoc: 1
name: classes
input: {channels: 2, height: 4, width: 4}
layers:
  - conv: {op: conv2d, out_channels: 3, kernel: 1}
  - gap: {op: global_avgpool}
  - flat: {op: flatten}
  - fc: {op: linear, out_features: 4}
  - prob: {op: softmax}
  - cls: {op: argmax}
)");
  const ir::Graph t = training(model);
  EXPECT_EQ(t.find_node("cls"), nullptr);
  EXPECT_EQ(t.find_node("prob"), nullptr);
  EXPECT_EQ(t.value_name(t.producer(t.outputs[0]).inputs[0]), "fc");  // the loss reads fc
  EXPECT_EQ(t.value_name(t.outputs[1]), "fc");
}

// ReLU6's gradient reads its output (kept anyway as the next layer's input), so the trainer
// need not keep its input; a hardtanh whose bounds bf16 rounds reads its input.
TEST(TrainingGraph, HardtanhGradientReadsTheOutputWhereItsBoundsAreExact) {
  const ir::Graph model = load_text(R"(zoc: 1
name: clamps
input: {channels: 2, height: 4, width: 4}
layers:
  - c1: {op: conv2d, out_channels: 3, kernel: 1}
  - six: {op: hardtanh, min_val: 0, max_val: 6}
  - c2: {op: conv2d, out_channels: 3, kernel: 1}
  - odd: {op: hardtanh, min_val: -0.7, max_val: 0.7}
  - gap: {op: global_avgpool}
  - flat: {op: flatten}
  - fc: {op: linear, out_features: 4}
)");
  const ir::Graph t = training(model);
  const ir::Node* six = t.find_node("d.c1");
  const ir::Node* odd = t.find_node("d.c2");
  ASSERT_TRUE(six && odd);
  EXPECT_EQ(six->op, OpKind::HardtanhGrad);
  EXPECT_EQ(t.value_name(six->inputs[0]), "six");
  EXPECT_EQ(odd->op, OpKind::HardtanhGrad);
  EXPECT_EQ(t.value_name(odd->inputs[0]), "c2");
}

TEST(TrainingGraph, RefusesFusedLayersAtTheirLines) {
  ir::Graph g = load("resnet18", {{"resolution", "32"}});
  Diagnostics d;
  ASSERT_TRUE(passes::run_pipeline(g, d));
  EXPECT_FALSE(passes::build_training_graph(g, {}, d));
  EXPECT_EQ(d.error_count(), 20u);  // every fused convolution, not just the first
  EXPECT_NE(d.render().find("resnet18.yaml"), std::string::npos);
  EXPECT_NE(d.render().find("error: layer 'conv1' (fused_conv2d): a fused convolution: training "
                            "takes the graph as written, before the inference passes"),
            std::string::npos)
      << d.render();
}

TEST(TrainingGraph, IsTheTrainingPipelineAndVerifiesEachPass) {
  ir::Graph g = load("lenet");
  std::ostringstream out;
  passes::PassOptions opts{true, "build-training-graph", &out};
  Diagnostics d;
  ASSERT_TRUE(passes::run_pipeline(g, d, opts, passes::training_pipeline())) << d.render();
  EXPECT_NE(out.str().find("// ----- IR after build-training-graph -----"), std::string::npos);
  EXPECT_NE(out.str().find("%d.fc2, %loss = softmax_cross_entropy(%fc2, %labels)"),
            std::string::npos)
      << out.str();
  EXPECT_EQ(g.nodes.size(), 33u);  // 12 forward + labels, loss, 11 backward, 8 sgd
}

// Lifetimes from the node order, as the planner computes them, for checking a plan.
struct Lives {
  std::vector<int64_t> first, last;
  explicit Lives(const ir::Graph& g) : first(g.values.size(), -1), last(g.values.size(), -1) {
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      for (ir::ValueId v : ir::Graph::results(g.nodes[i])) first[v] = int64_t(i);
      for (ir::ValueId v : g.nodes[i].inputs) last[v] = std::max(last[v], int64_t(i));
    }
    for (size_t v = 0; v < first.size(); ++v) last[v] = std::max(last[v], first[v]);
    for (ir::ValueId v : g.outputs) last[v] = int64_t(g.nodes.size());
  }
  bool together(size_t a, size_t b) const { return first[a] <= last[b] && first[b] <= last[a]; }
};

// Non-batched values share the fixed region by lifetime: never two live ones on the same bytes.
TEST(TrainingMemoryPlan, FixedRegionSharesByLifetime) {
  ir::Graph t = training(load("resnet18", {{"resolution", "32"}, {"num_classes", "10"}}));
  t.outputs.resize(2);  // the loss and logits: gradients now die at their sgd node
  for (const ir::Node& n : t.nodes) {
    if (n.op == OpKind::Sgd) t.outputs.push_back(n.output);
  }
  const lower::MemoryPlan plan = lower::plan_memory(t, {});
  const Lives lives(t);
  int64_t fixed_values = 0;
  for (size_t a = 0; a < t.values.size(); ++a) {
    const auto& sa = plan.slots[a];
    EXPECT_EQ(sa.fixed, !t.type(ir::ValueId(a)).batched);
    if (!sa.fixed || sa.alias_of != ir::kNoValue) continue;
    ++fixed_values;
    EXPECT_FALSE(sa.pinned);
    EXPECT_EQ(sa.offset % lower::MemoryPlan::kAlignment, 0);
    EXPECT_LE(sa.offset + sa.bytes, plan.fixed_bytes);
    for (size_t b = a + 1; b < t.values.size(); ++b) {
      const auto& sb = plan.slots[b];
      if (!sb.fixed || sb.alias_of != ir::kNoValue) continue;
      const bool overlap = sa.offset < sb.offset + sb.bytes && sb.offset < sa.offset + sa.bytes;
      EXPECT_FALSE(lives.together(a, b) && overlap) << t.value_name(a) << " / " << t.value_name(b);
    }
  }
  // 20 saved statistics, 62 gradients, 62 updates, the loss.
  EXPECT_EQ(fixed_values, 20 + 62 + 62 + 1);
  EXPECT_LT(plan.fixed_bytes, plan.unplanned_fixed_bytes);
  EXPECT_NE(plan.summary().find("fixed region"), std::string::npos);
  // The batched values did not move into it, nor it into theirs.
  EXPECT_GT(plan.arena_bytes_per_sample, 0);
}

// Pinned values stay where the caller puts them (here each parameter's gradient in a packed
// buffer in state_dict order, and each update in place of its parameter) and take no room.
TEST(TrainingMemoryPlan, PinnedValuesStayInTheCallersBuffers) {
  const ir::Graph t = training(load("lenet"));
  lower::MemoryPlanOptions o;
  int64_t grads = 0, params = 0;
  std::map<ir::ValueId, int64_t> want;
  for (const ir::Node& n : t.nodes) {
    for (ir::ValueId v : n.extra_outputs) {
      if (t.value_name(v).rfind("grad.", 0) != 0) continue;
      want[v] = o.pinned[v] = grads;
      grads += t.type(v).sample_numel() * 4;
    }
    if (n.op == OpKind::Sgd) {
      want[n.output] = o.pinned[n.output] = params;
      params += t.type(n.output).sample_numel() * 4;
    }
  }
  const lower::MemoryPlan plan = lower::plan_memory(t, o);
  for (const auto& [v, offset] : want) {
    EXPECT_TRUE(plan.slots[v].pinned);
    EXPECT_TRUE(plan.slots[v].fixed);
    EXPECT_EQ(plan.slots[v].offset, offset);
    EXPECT_EQ(plan.slots[v].bytes, t.type(v).sample_numel() * 4);
  }
  // What is left of the fixed region is the loss.
  EXPECT_EQ(plan.unplanned_fixed_bytes, lower::MemoryPlan::kAlignment);
  EXPECT_EQ(plan.fixed_bytes, lower::MemoryPlan::kAlignment);
  // The labels are the caller's, like the input; flatten_grad is a view of its dy.
  EXPECT_EQ(plan.slots[t.nodes[1].output].offset, -1);
  const ir::Node* unflatten = t.find_node("d.pool2");
  ASSERT_EQ(unflatten->op, OpKind::FlattenGrad);
  EXPECT_EQ(plan.slots[unflatten->output].alias_of, unflatten->inputs[1]);
  EXPECT_EQ(plan.slots[unflatten->output].offset, plan.slots[unflatten->inputs[1]].offset);
}

}  // namespace
}  // namespace zoc
