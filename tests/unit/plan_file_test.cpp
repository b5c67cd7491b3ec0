// Plan files (runtime/zoc/cudnn/plan_file.h): what `<model>_main --tune` writes and a generated
// model reads. A round trip keeps every choice; a plan from another GPU, cuDNN or model is
// recognized as such; a malformed file is an error naming its line, never a crash or a silent
// default.
#include "zoc/cudnn/plan_file.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <utility>
#include <vector>

namespace {

zoc::PlanFile sample() {
  zoc::PlanFile p;
  p.gpu = "NVIDIA H200";
  p.cudnn = 91900;
  p.model = "resnet50";
  p.precision = "fp16";
  p.ir_hash = "0123456789abcdef";
  p.set({"conv1", 1, 1, 1, 4096, 0.0123, -1, ""});
  p.set({"layer1.0.conv2", 256, 6, 2, 0, 0.25, -1, ""});
  p.set({"layer1.0.conv3", 8, 0, 0, 1 << 20, 0.031, 42, "k2=3,k14=-1"});  // a graph-API config
  p.set({"fc", 8, 0, 0, 0, 0.002, 7, "-"});
  p.set({"stem", 256, 0, 0, 0, 0.3, 52, "-", true});  // the conv alone, its activation after
  return p;
}

std::string error_of(const std::string& text) {
  auto parsed = zoc::PlanFile::parse(text, "p.plan");
  return parsed.ok() ? "" : parsed.error().message;
}

TEST(PlanFile, RoundTripKeepsEveryChoice) {
  const zoc::PlanFile p = sample();
  auto back = zoc::PlanFile::parse(p.text(), "p.plan");
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->text(), p.text());
  ASSERT_NE(back->find("layer1.0.conv2", 256), nullptr);
  EXPECT_EQ(back->find("layer1.0.conv2", 256)->algo, 6);
  EXPECT_EQ(back->find("layer1.0.conv2", 256)->math, 2);
  EXPECT_EQ(back->find("conv1", 1)->workspace, 4096u);
  EXPECT_EQ(back->find("conv1", 2), nullptr);
  EXPECT_EQ(back->gpu, "NVIDIA H200");  // a name with a space survives
  ASSERT_NE(back->find("layer1.0.conv3", 8), nullptr);
  EXPECT_EQ(back->find("layer1.0.conv3", 8)->engine, 42);
  EXPECT_EQ(back->find("layer1.0.conv3", 8)->knobs, "k2=3,k14=-1");
  EXPECT_EQ(back->find("layer1.0.conv2", 256)->engine, -1);  // a legacy choice stays legacy
  EXPECT_NE(p.text().find("graph 8 42 k2=3,k14=-1 1048576 0.03100 layer1.0.conv3\n"),
            std::string::npos);
  EXPECT_FALSE(back->find("layer1.0.conv3", 8)->split);
  ASSERT_NE(back->find("stem", 256), nullptr);
  EXPECT_TRUE(back->find("stem", 256)->split);
  EXPECT_EQ(back->find("stem", 256)->engine, 52);
  EXPECT_NE(p.text().find("graph-split 256 52 - 0 0.30000 stem\n"), std::string::npos);
}

TEST(PlanFile, KnobListsParseAndPrintBack) {
  std::vector<std::pair<int, int64_t>> knobs;
  ASSERT_TRUE(zoc::parse_knob_list("k2=3,k14=-1", &knobs));
  ASSERT_EQ(knobs.size(), 2u);
  EXPECT_EQ(knobs[1], (std::pair<int, int64_t>{14, -1}));
  EXPECT_EQ(zoc::knob_list_text(knobs), "k2=3,k14=-1");
  ASSERT_TRUE(zoc::parse_knob_list("-", &knobs));
  EXPECT_TRUE(knobs.empty());
  EXPECT_EQ(zoc::knob_list_text(knobs), "-");
  for (const char* bad : {"", ",", "k2=3,", "k2", "k=3", "2=3", "k2=3x", "k-1=3", "k300=1", "k2 =3",
                          "k2=3,,k4=1", "x2=3"}) {
    EXPECT_FALSE(zoc::parse_knob_list(bad, &knobs)) << bad;
  }
}

TEST(PlanFile, SetReplacesTheChoiceForALayerAndBatch) {
  zoc::PlanFile p = sample();
  p.set({"conv1", 1, 0, 0, 0, 0.5, -1, ""});
  EXPECT_EQ(p.choices.size(), 5u);
  EXPECT_EQ(p.find("conv1", 1)->algo, 0);
  p.set({"conv1", 1, 0, 0, 0, 0.4, 9, "k1=2"});  // a graph-API choice replaces a legacy one
  EXPECT_EQ(p.choices.size(), 5u);
  EXPECT_EQ(p.find("conv1", 1)->engine, 9);
}

TEST(PlanFile, LargestWorkspaceCoversTheBatchesAModelCanRun) {
  zoc::PlanFile p = sample();  // conv1 at batch 1: 4096 bytes; layer1.0.conv2 at 256: 0
  p.set({"conv1", 64, 1, 1, 1 << 20, 0.1, -1, ""});
  p.set({"conv1", 128, 1, 1, 1ull << 40, 0.1, -1, ""});  // over any limit below
  EXPECT_EQ(p.largest_workspace(1, 1 << 30), 4096u);
  EXPECT_EQ(p.largest_workspace(64, 1 << 30), uint64_t(1) << 20);
  EXPECT_EQ(p.largest_workspace(256, 1 << 30), uint64_t(1) << 20);
  EXPECT_EQ(p.largest_workspace(256, 1000), 0u);
}

TEST(PlanFile, MismatchNamesWhatDiffers) {
  const zoc::PlanFile p = sample();
  EXPECT_EQ(p.mismatch("NVIDIA H200", 91900, "resnet50", "fp16", "0123456789abcdef"), "");
  EXPECT_NE(p.mismatch("NVIDIA H100 80GB HBM3", 91900, "resnet50", "fp16", "0123456789abcdef")
                .find("measured on 'NVIDIA H200'"),
            std::string::npos);
  EXPECT_NE(
      p.mismatch("NVIDIA H200", 91400, "resnet50", "fp16", "0123456789abcdef").find("cuDNN 91900"),
      std::string::npos);
  EXPECT_NE(p.mismatch("NVIDIA H200", 91900, "resnet50", "bf16", "0123456789abcdef")
                .find("resnet50 fp16"),
            std::string::npos);
  EXPECT_NE(p.mismatch("NVIDIA H200", 91900, "resnet50", "fp16", "ffffffffffffffff"), "");
}

TEST(PlanFile, MalformedFilesAreLocatedErrors) {
  const std::string head = "zoc-plan 1\ngpu G\ncudnn 91900\nmodel m fp16 abc\n";
  EXPECT_EQ(error_of(""), "p.plan: empty file (not a zoc plan file)");
  EXPECT_EQ(error_of("hello\n"), "p.plan:1: expected 'zoc-plan 1' (not a zoc plan file)");
  EXPECT_EQ(error_of("zoc-plan 1\ngpu G\n"), "p.plan: missing its gpu, cudnn or model line");
  EXPECT_EQ(error_of(head + "conv 1 1 1 0 0.1\n"),
            "p.plan:5: expected 'conv BATCH ALGO MATH WORKSPACE MS LAYER'");
  EXPECT_EQ(error_of(head + "conv 1 1 1 0 0.1 conv1 extra\n"),
            "p.plan:5: expected 'conv BATCH ALGO MATH WORKSPACE MS LAYER'");
  EXPECT_EQ(error_of(head + "conv 0 1 1 0 0.1 conv1\n"), "p.plan:5: batch out of range 1..65536");
  EXPECT_EQ(error_of(head + "conv 1 99 1 0 0.1 conv1\n"),
            "p.plan:5: algorithm or math type out of range");
  EXPECT_EQ(error_of(head + "conv 1 1 1 0 nan conv1\n"),
            "p.plan:5: expected 'conv BATCH ALGO MATH WORKSPACE MS LAYER'");
  EXPECT_EQ(error_of(head + "conv 1 1 1 0 0.1 conv1\nconv 1 2 1 0 0.1 conv1\n"),
            "p.plan:6: a second choice for layer 'conv1' at batch 1");
  EXPECT_EQ(error_of("zoc-plan 1\ngpu G\ncudnn nine\n"),
            "p.plan:3: 'cudnn' needs one version number, e.g. 91900");
  EXPECT_EQ(error_of("zoc-plan 1\nmodel m fp16\n"),
            "p.plan:2: 'model' needs a name, a precision and an IR hash");
  EXPECT_EQ(error_of(head + "engine 3\n"),
            "p.plan:5: unknown line 'engine' (expected gpu, cudnn, model, conv, graph or "
            "graph-split)");
  EXPECT_EQ(error_of(head + "graph-split 1 42 k2=3 0 0.1\n"),
            "p.plan:5: expected 'graph-split BATCH ENGINE KNOBS WORKSPACE MS LAYER'");
  EXPECT_EQ(error_of(head + "graph 1 42 - 0 0.1 conv1\ngraph-split 1 42 - 0 0.1 conv1\n"),
            "p.plan:6: a second choice for layer 'conv1' at batch 1");
  EXPECT_EQ(error_of(head + "graph 1 42 k2=3 0 0.1\n"),
            "p.plan:5: expected 'graph BATCH ENGINE KNOBS WORKSPACE MS LAYER'");
  EXPECT_EQ(error_of(head + "graph 1 -3 k2=3 0 0.1 conv1\n"), "p.plan:5: engine out of range");
  EXPECT_EQ(error_of(head + "graph 1 42 k2=,k3=1 0 0.1 conv1\n"),
            "p.plan:5: knobs must be '-' or 'k<type>=<value>,...', got 'k2=,k3=1'");
  EXPECT_EQ(error_of(head + "graph 1 42 - 0 0.1 conv1\nconv 1 2 1 0 0.1 conv1\n"),
            "p.plan:6: a second choice for layer 'conv1' at batch 1");
  EXPECT_EQ(error_of(head + "conv -1 1 1 0 0.1 conv1\n"), "p.plan:5: batch out of range 1..65536");
  EXPECT_EQ(error_of(head + "conv 1 1 1 -5 0.1 conv1\n"), "p.plan:5: workspace out of range");
  EXPECT_EQ(error_of(head + "gpu Other\n"), "p.plan:5: a second 'gpu' line");
  EXPECT_EQ(error_of(head + "# a comment\n\r\n"), "");
}

TEST(PlanFile, SaveIsAtomicAndLoadReadsItBack) {
  const std::string path = ::testing::TempDir() + "zoc_plan_file_test.plan";
  const zoc::PlanFile p = sample();
  ASSERT_TRUE(p.save(path).ok());
  auto back = zoc::PlanFile::load(path);
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->text(), p.text());
  std::FILE* tmp = std::fopen((path + ".tmp").c_str(), "rb");
  EXPECT_EQ(tmp, nullptr);  // renamed into place
  if (tmp) std::fclose(tmp);
  std::remove(path.c_str());
  auto missing = zoc::PlanFile::load(path);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().message, path + ": cannot open the plan file");
  auto dir = zoc::PlanFile::load(::testing::TempDir());
  EXPECT_FALSE(dir.ok());
}

}  // namespace
