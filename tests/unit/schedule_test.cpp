// The cuDNN backend's side-branch schedule (compiler/backend/cudnn/schedule.h): ResNet-50's four
// downsample convolutions move before their block's first convolution, join at its last, and
// the memory plan keeps what they read alive until the join, so no main-branch value can take
// those bytes while the side stream may still be reading them.
#include <gtest/gtest.h>

#include <set>

#include "compiler/backend/cudnn/schedule.h"
#include "compiler/passes/memory_plan.h"
#include "compiler/passes/pipeline.h"
#include "tests/unit/test_util.h"

namespace zoc {
namespace {

ir::Graph optimized(const std::string& model) {
  Diagnostics d;
  auto g = test::load(test::repo_path("models/" + model + ".yaml"), d, {});
  EXPECT_TRUE(g.has_value()) << d.render();
  EXPECT_TRUE(passes::run_pipeline(*g, d)) << d.render();
  return std::move(*g);
}

TEST(Schedule, ResNet50DownsamplesForkBeforeTheBlockAndJoinAtItsEnd) {
  const ir::Graph g = optimized("resnet50");
  std::vector<cudnn::SideBranch> branches;
  const ir::Graph s = cudnn::schedule_side_branches(g, &branches);
  ASSERT_EQ(branches.size(), 4u);
  ASSERT_EQ(s.nodes.size(), g.nodes.size());
  const char* blocks[] = {"layer1.0", "layer2.0", "layer3.0", "layer4.0"};
  for (size_t k = 0; k < branches.size(); ++k) {
    const ir::Node& d = s.nodes[branches[k].node];
    const ir::Node& j = s.nodes[branches[k].join];
    EXPECT_EQ(d.name, std::string(blocks[k]) + ".downsample.0");
    EXPECT_EQ(j.name, std::string(blocks[k]) + ".conv3");
    EXPECT_EQ(s.nodes[branches[k].node + 1].name, std::string(blocks[k]) + ".conv1");
    EXPECT_EQ(j.inputs[1], d.output);
  }
  // Still a valid order: every value is read after it is produced.
  for (size_t i = 0; i < s.nodes.size(); ++i) {
    for (ir::ValueId v : s.nodes[i].inputs) EXPECT_LT(s.values[v].producer, int(i));
  }
  // LeNet has no branches: the same order.
  std::vector<cudnn::SideBranch> none;
  const ir::Graph lenet = optimized("lenet");
  const ir::Graph same = cudnn::schedule_side_branches(lenet, &none);
  EXPECT_TRUE(none.empty());
  for (size_t i = 0; i < lenet.nodes.size(); ++i) EXPECT_EQ(same.nodes[i].name, lenet.nodes[i].name);
}

TEST(Schedule, ASideBranchInputOutlivesEveryMainBranchValueUntilTheJoin) {
  const ir::Graph g = optimized("resnet50");
  std::vector<cudnn::SideBranch> branches;
  const ir::Graph s = cudnn::schedule_side_branches(g, &branches);
  passes::MemoryPlanOptions o;
  o.element_bytes = 2;
  o.external_input = false;
  for (const auto& b : branches) o.live_until.push_back({s.nodes[b.node].inputs[0], b.join});
  const passes::MemoryPlan plan = passes::plan_memory(s, o);
  for (const auto& b : branches) {
    const auto& x = plan.slots[s.nodes[b.node].inputs[0]];
    const auto& y = plan.slots[s.nodes[b.node].output];
    for (int i = b.node + 1; i <= b.join; ++i) {  // values the main branch writes meanwhile
      const auto& m = plan.slots[s.nodes[i].output];
      if (m.offset < 0 || m.alias_of != ir::kNoValue) continue;
      for (const auto* side : {&x, &y}) {
        const bool overlap = m.offset < side->offset + side->bytes && side->offset < m.offset + m.bytes;
        EXPECT_FALSE(overlap) << s.nodes[i].name << " overlaps " << s.nodes[b.node].name;
      }
    }
  }
}

}  // namespace
}  // namespace zoc
