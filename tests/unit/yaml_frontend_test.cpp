// Tests of the YAML frontend on well-formed models: the shipped models, blocks, repetition,
// `when`, references, includes and overrides. Malformed input is covered by the bad-input
// files under tests/bad_inputs/.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>

#include "compiler/ir/printer.h"
#include "tests/unit/test_util.h"

namespace zoc {
namespace {

using test::load;
using test::repo_path;

// Parameter counts as torchvision reports them: sum(p.numel() for p in m.parameters()).
TEST(YamlModels, ResNetParameterCountsMatchTorchvision) {
  const std::pair<const char*, int64_t> expected[] = {{"resnet18", 11689512},
                                                      {"resnet34", 21797672},
                                                      {"resnet50", 25557032},
                                                      {"resnet101", 44549160},
                                                      {"resnet152", 60192808}};
  for (const auto& [name, count] : expected) {
    Diagnostics d;
    auto g = load(repo_path(std::string("models/") + name + ".yaml"), d);
    ASSERT_TRUE(g) << name << "\n" << d.render();
    EXPECT_EQ(g->trainable_param_count(), count) << name;
    EXPECT_EQ(g->type(g->outputs[0]).dims, (std::vector<int64_t>{1000})) << name;
  }
}

TEST(YamlModels, ResNet50StructureAndStateDictNames) {
  Diagnostics d;
  auto g = load(repo_path("models/resnet50.yaml"), d);
  ASSERT_TRUE(g) << d.render();
  EXPECT_EQ(g->name, "resnet50");
  // 53 convolutions (49 in blocks + 4 downsample), 53 BNs, one linear.
  int convs = 0, bns = 0;
  for (const ir::Node& n : g->nodes) {
    convs += n.op == ir::OpKind::Conv2d;
    bns += n.op == ir::OpKind::BatchNorm2d;
  }
  EXPECT_EQ(convs, 53);
  EXPECT_EQ(bns, 53);
  for (const char* name : {"conv1", "bn1", "layer1.0.downsample.0", "layer1.0.downsample.1",
                           "layer2.3.conv3", "layer3.5.bn2", "layer4.0.downsample.0", "fc"}) {
    EXPECT_NE(g->find_node(name), nullptr) << name;
  }
  EXPECT_EQ(g->find_node("layer1.1.downsample.0"), nullptr);
  const ir::Node* add = g->find_node("layer1.1.add");
  ASSERT_NE(add, nullptr);
  // The identity shortcut of a block without downsample is the previous block's output.
  EXPECT_EQ(g->producer(add->inputs[1]).name, "layer1.0.relu3");
  EXPECT_EQ(g->type(g->find_node("layer4.2.relu3")->output).dims,
            (std::vector<int64_t>{2048, 7, 7}));
  EXPECT_EQ(g->find_node("layer2.0.conv2")->attrs.pair("stride"), (ir::Pair{2, 2}));
  EXPECT_EQ(g->find_node("layer2.1.conv2")->attrs.pair("stride"), (ir::Pair{1, 1}));
  EXPECT_EQ(g->find_node("layer3.0.conv2")->loc.file, repo_path("models/resnet_blocks.yaml"));
}

TEST(YamlModels, ResNet18HasNoDownsampleInLayer1) {
  Diagnostics d;
  auto g = load(repo_path("models/resnet18.yaml"), d);
  ASSERT_TRUE(g) << d.render();
  EXPECT_EQ(g->find_node("layer1.0.downsample.0"), nullptr);
  EXPECT_NE(g->find_node("layer2.0.downsample.0"), nullptr);
}

TEST(YamlModels, LeNetMatchesTheStudy) {
  Diagnostics d;
  auto g = load(repo_path("models/lenet.yaml"), d);
  ASSERT_TRUE(g) << d.render();
  EXPECT_EQ(g->type(g->find_node("pool2")->output).dims, (std::vector<int64_t>{64, 7, 7}));
  EXPECT_EQ(g->find_node("fc1")->params[0].shape, (std::vector<int64_t>{1024, 3136}));
  EXPECT_EQ(g->trainable_param_count(), 3274634);  // PyTorch's count for this LeNet
}

TEST(YamlModels, ParamsCanBeOverridden) {
  Diagnostics d;
  auto g = load(repo_path("models/resnet50.yaml"), d,
                {{"num_classes", "10"}, {"in_channels", "1"}, {"resolution", "64"}});
  ASSERT_TRUE(g) << d.render();
  EXPECT_EQ(g->type(g->outputs[0]).dims, (std::vector<int64_t>{10}));
  EXPECT_EQ(g->find_node("conv1")->params[0].shape, (std::vector<int64_t>{64, 1, 7, 7}));
  EXPECT_EQ(g->type(g->find_node("layer4.2.relu3")->output).dims,
            (std::vector<int64_t>{2048, 2, 2}));

  Diagnostics bad;
  EXPECT_FALSE(load(repo_path("models/resnet50.yaml"), bad, {{"num_clases", "10"}}));
  EXPECT_NE(bad.render().find("'num_clases' is not a param of model 'resnet50'"), std::string::npos)
      << bad.render();
}

TEST(YamlFrontend, GroupsWhenForwardReferencesAndOutput) {
  test::TempDir dir;
  const std::string path = dir.write("m.yaml", R"(zoc: 1
params: {width: 8, skip: false}
input: {channels: 2, height: 6, width: 6}
layers:
  - a: {op: conv2d, out_channels: $width, kernel: 3, padding: 1}
  - later_user: {op: add, inputs: [b, a]}     # forward reference to b
  - b: {op: relu, input: a}
  - grp:
      input: later_user
      repeat: 2
      layers:
        - c: {op: conv2d, out_channels: "${width * (i + 1) / (i + 1)}", kernel: 1}
        - opt: {op: tanh, when: $skip}
  - head: {op: global_avgpool}
  - tail: {op: sigmoid}
output: tail
)");
  Diagnostics d;
  auto g = load(path, d);
  ASSERT_TRUE(g) << d.render();
  std::vector<std::string> names;
  for (const ir::Node& n : g->nodes) names.push_back(n.name);
  // b is ordered before its user; the skipped tanh layers vanish.
  EXPECT_EQ(names, (std::vector<std::string>{"input", "a", "b", "later_user", "grp.0.c", "grp.1.c",
                                             "head", "tail"}));
  EXPECT_EQ(g->producer(g->find_node("grp.1.c")->inputs[0]).name, "grp.0.c");
  Diagnostics d2;
  auto g2 = load(path, d2, {{"skip", "true"}});
  ASSERT_TRUE(g2) << d2.render();
  EXPECT_NE(g2->find_node("grp.1.opt"), nullptr);
}

TEST(YamlFrontend, BlocksWithDefaultsAndIncludes) {
  test::TempDir dir;
  dir.write("lib.yaml", R"(zoc: 1
blocks:
  unit:
    params: {ch: null, act: true}
    layers:
      - conv: {op: conv2d, out_channels: $ch, kernel: 3, padding: 1, bias: false}
      - act: {op: relu, when: $act}
)");
  const std::string path = dir.write("m.yaml", R"(zoc: 1
include: lib.yaml
input: {channels: 3, height: 8, width: 8}
layers:
  - u1: {block: unit, args: {ch: 4}}
  - u2: {block: unit, args: {ch: 6, act: false}}
)");
  Diagnostics d;
  auto g = load(path, d);
  ASSERT_TRUE(g) << d.render();
  EXPECT_NE(g->find_node("u1.act"), nullptr);
  EXPECT_EQ(g->find_node("u2.act"), nullptr);
  EXPECT_EQ(g->find_node("u2.conv")->params[0].name, "u2.conv.weight");
  EXPECT_EQ(g->find_node("u2.conv")->loc.file, dir.file("lib.yaml"));
  EXPECT_EQ(g->find_node("u2.conv")->loc.line, 6);
}

// Found while writing the YAML fuzz target: `include: /dev/zero` was read until memory ran out.
// Only regular files are read, and at most yaml::kMaxFileBytes of each (a device is a bad-input
// case, tests/bad_inputs/yaml/include_device.yaml).
TEST(YamlFrontend, RejectsFilesLargerThanTheLimit) {
  test::TempDir dir;
  dir.write("big.yaml", "zoc: 1\n" + std::string(yaml::kMaxFileBytes, '#'));
  const std::string path = dir.write("m.yaml", R"(zoc: 1
include: big.yaml
input: {channels: 3, height: 8, width: 8}
layers:
  - a: {op: relu}
)");
  Diagnostics d;
  EXPECT_FALSE(load(path, d));
  EXPECT_NE(d.render().find("m.yaml:2:10: error: included file '" + dir.file("big.yaml") +
                            "' is larger than 16 MiB"),
            std::string::npos)
      << d.render();
}

// What an include may name (issue 31, models/README.md): a file in the including file's folder or
// below it. A symbolic link is followed only while it stays there; a device or pipe that a link
// or a name inside the folder reaches is refused when opened, never read.
TEST(YamlFrontend, IncludesStayInTheIncludingFilesFolder) {
  test::TempDir dir;
  namespace fs = std::filesystem;
  fs::create_directories(dir.file("lib/deeper"));
  dir.write("lib/deeper/act.yaml", "zoc: 1\nblocks:\n  act: {layers: [{r: {op: relu}}]}\n");
  dir.write("lib/nested.yaml", "zoc: 1\ninclude: deeper/act.yaml\n");
  dir.write("outside.yaml", "zoc: 1\nblocks:\n  out: {layers: [{r: {op: relu}}]}\n");
  fs::create_symlink("deeper/act.yaml", dir.file("lib/inside_link.yaml"));
  fs::create_symlink("../outside.yaml", dir.file("lib/outside_link.yaml"));
  fs::create_symlink("/dev/zero", dir.file("lib/device_link.yaml"));
  fs::create_directory_symlink("..", dir.file("lib/up"));
  ASSERT_EQ(mkfifo(dir.file("lib/pipe.yaml").c_str(), 0600), 0);
  auto model = [&](const std::string& include) {
    return dir.write("lib/m.yaml", "zoc: 1\ninclude: " + include +
                                       "\ninput: {channels: 3, height: 8, width: 8}\n"
                                       "layers:\n  - a: {block: act}\n");
  };
  for (const char* ok : {"nested.yaml", "inside_link.yaml", "deeper/act.yaml"}) {
    Diagnostics d;
    EXPECT_TRUE(load(model(ok), d)) << ok << ": " << d.render();
  }
  const std::string outside = "resolves outside the including file's folder (a symbolic link?)";
  const std::vector<std::pair<std::string, std::string>> refused = {
      {"outside_link.yaml", outside},
      {"device_link.yaml", outside},
      {"up/outside.yaml", outside},
      {"pipe.yaml",
       "cannot open included file '" + dir.file("lib/pipe.yaml") + "': it is not a regular file"},
      {dir.file("outside.yaml"), "is an absolute path"},
      {"deeper/../nested.yaml", "leads out of the including file's folder ('..')"},
  };
  for (const auto& [include, why] : refused) {
    Diagnostics d;
    EXPECT_FALSE(load(model(include), d)) << include;
    EXPECT_NE(d.render().find(dir.file("lib/m.yaml") + ":2:10: error: "), std::string::npos)
        << d.render();
    EXPECT_NE(d.render().find(why), std::string::npos) << include << ": " << d.render();
  }
}

TEST(YamlFrontend, ReportsEveryErrorInOneRun) {
  test::TempDir dir;
  const std::string path = dir.write("m.yaml", R"(zoc: 1
input: {channels: 3, height: 8, width: 8}
layers:
  - a: {op: prelu}
  - b: {op: conv2d, out_channels: 4, kernel: 3, strides: 2}
  - c: {op: sort}
  - d: {op: relu, input: nowhere}
)");
  Diagnostics d;
  EXPECT_FALSE(load(path, d));
  const std::string text = d.render();
  EXPECT_EQ(d.error_count(), 4u) << text;
  EXPECT_NE(text.find("m.yaml:4:13: error: layer 'a': unknown op 'prelu' (did you mean 'relu'?)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("m.yaml:5:49: error: layer 'b': unknown attribute 'strides' for conv2d "
                      "(did you mean 'stride'?)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("m.yaml:6:13: error: layer 'c': unknown op 'sort'"), std::string::npos)
      << text;
  EXPECT_NE(text.find("m.yaml:7:26: error: layer 'd': input 'nowhere' is not defined"),
            std::string::npos)
      << text;
}

TEST(YamlFrontend, PrintedIrIsDeterministic) {
  Diagnostics d1, d2;
  auto a = load(repo_path("models/resnet18.yaml"), d1);
  auto b = load(repo_path("models/resnet18.yaml"), d2);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(ir::print_graph(*a), ir::print_graph(*b));
}

}  // namespace
}  // namespace zoc
