// lower-to-target (compiler/lower/): what it decides for the cuDNN backend's targets, read off
// the lowered IR; the side-branch schedule it applies (ResNet-50's four downsample convolutions
// move before their block's first convolution and join at its last); and the verifier's checks
// of a lowered graph, each shown to fail on a graph broken the way it guards against.
#include <gtest/gtest.h>

#include <set>

#include "compiler/backend/cudnn/emitter.h"
#include "compiler/ir/printer.h"
#include "compiler/ir/verify.h"
#include "compiler/lower/lower_to_target.h"
#include "compiler/lower/schedule.h"
#include "compiler/passes/pipeline.h"
#include "tests/unit/test_util.h"

namespace zoc {
namespace {

using ir::LayerKind;

ir::Graph optimized(const std::string& path) {
  Diagnostics d;
  auto g = test::load(test::repo_path(path), d, {});
  EXPECT_TRUE(g.has_value()) << d.render();
  if (!g) return {};
  EXPECT_TRUE(passes::run_pipeline(*g, d)) << d.render();
  return std::move(*g);
}

ir::Graph model(const std::string& name) { return optimized("models/" + name + ".yaml"); }

// The model lowered by the pipeline for the cuDNN backend with these options.
ir::Graph lowered(const std::string& path, const cudnn::EmitOptions& o) {
  Diagnostics d;
  auto g = test::load(test::repo_path(path), d, {});
  EXPECT_TRUE(g.has_value()) << d.render();
  if (!g) return {};
  const lower::TargetDesc target = cudnn::lowering_target(o);
  passes::PassOptions popts;
  popts.target = &target;
  popts.verify_each = true;
  EXPECT_TRUE(passes::run_pipeline(*g, d, popts)) << d.render();
  return std::move(*g);
}

cudnn::EmitOptions options(cudnn::Precision p, bool side_stream = false) {
  cudnn::EmitOptions o;
  o.precision = p;
  o.conv_api = cudnn::ConvApi::kGraph;
  o.side_stream = side_stream;
  return o;
}

const ir::Node& node(const ir::Graph& g, const std::string& name) {
  const ir::Node* n = g.find_node(name);
  EXPECT_NE(n, nullptr) << name;
  return *n;
}

TEST(Schedule, ResNet50DownsamplesForkBeforeTheBlockAndJoinAtItsEnd) {
  const ir::Graph g = model("resnet50");
  std::vector<lower::SideBranch> branches;
  const ir::Graph s = lower::schedule_side_branches(g, &branches);
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
  std::vector<lower::SideBranch> none;
  const ir::Graph lenet = model("lenet");
  const ir::Graph same = lower::schedule_side_branches(lenet, &none);
  EXPECT_TRUE(none.empty());
  for (size_t i = 0; i < lenet.nodes.size(); ++i)
    EXPECT_EQ(same.nodes[i].name, lenet.nodes[i].name);
}

TEST(Lowering, ResNet50Fp16IsNhwcHalfWithAPaddedInputAndGraphConvolutions) {
  const ir::Graph g = lowered("models/resnet50.yaml", options(cudnn::Precision::kFP16));
  ASSERT_TRUE(g.target);
  EXPECT_EQ(g.target->precision, "fp16");
  EXPECT_EQ(g.target->side_branches, 0);
  EXPECT_TRUE(g.target->output_convert);
  for (const ir::Value& v : g.values) {
    EXPECT_EQ(v.type->dtype, ir::DType::F16);
    if (v.type->dims.size() == 3) {
      EXPECT_EQ(v.type->layout, ir::Layout::NHWC);
    }
    ASSERT_TRUE(v.storage);
  }
  const ir::Node& input = g.nodes.front();
  EXPECT_EQ(input.lowered->kind, LayerKind::InputConvert);
  EXPECT_EQ(g.values[input.output].storage->stored_channels, 4);  // RGB padded to 4
  const ir::Node& conv1 = node(g, "conv1");
  EXPECT_EQ(conv1.lowered->kind, LayerKind::ConvGraph);
  EXPECT_EQ(conv1.lowered->epilogue, ir::Epilogue::kFused);  // its ReLU
  EXPECT_EQ(conv1.lowered->weights, ir::WeightLayout::kKRSC);
  EXPECT_EQ(node(g, "avgpool").lowered->kind, LayerKind::AdaptivePool);  // NHWC global pool
  EXPECT_EQ(node(g, "flatten").lowered->kind, LayerKind::View);
  EXPECT_EQ(node(g, "fc").lowered->kind, LayerKind::LinearGemm);
  // The printed IR shows it.
  const std::string text = ir::print_graph(g, {.locations = false, .params = false});
  EXPECT_NE(text.find("layer input.to_nhwc"), std::string::npos) << text;
  EXPECT_NE(text.find("stored f16 NHWC (channels 3 padded to 4)"), std::string::npos) << text;
}

TEST(Lowering, ResNet50Fp32IsNchwWithFourSideBranchesAndACopiedInput) {
  const ir::Graph g = lowered("models/resnet50.yaml", options(cudnn::Precision::kFP32, true));
  EXPECT_EQ(g.target->side_branches, 4);
  EXPECT_FALSE(g.target->output_convert);
  EXPECT_EQ(g.nodes.front().lowered->kind, LayerKind::InputCopy);  // graph plans: fixed pointers
  EXPECT_EQ(g.values[g.nodes.front().output].storage->stored_channels, 3);  // NCHW: unpadded
  const ir::Node& d = node(g, "layer1.0.downsample.0");
  EXPECT_EQ(d.lowered->side_branch, 0);
  EXPECT_EQ(g.values[d.output].storage->stream, ir::Stream::kSide);
  EXPECT_EQ(node(g, "layer1.0.conv3").lowered->joins, std::vector<int>{0});
  EXPECT_EQ(node(g, "conv1").lowered->weights, ir::WeightLayout::kKCRS);
  // The legacy API reads the caller's input in place.
  cudnn::EmitOptions legacy = options(cudnn::Precision::kFP32, true);
  legacy.conv_api = cudnn::ConvApi::kLegacy;
  const ir::Graph l = lowered("models/resnet50.yaml", legacy);
  EXPECT_EQ(l.nodes.front().lowered->kind, LayerKind::InputInPlace);
  EXPECT_LT(l.values[l.nodes.front().output].storage->offset, 0);
  EXPECT_EQ(node(l, "conv1").lowered->kind, LayerKind::ConvLegacy);
}

// Where each activation runs: ReLU in any convolution's epilogue; the others in a graph-API
// convolution's where cuDNN's pointwise operations express them, else as a kernel after it.
TEST(Lowering, EpilogueActivationsFuseWhereTheLayerAppliesThem) {
  cudnn::EmitOptions o = options(cudnn::Precision::kFP16);
  o.conv_api = cudnn::ConvApi::kLegacy;
  const ir::Graph legacy = lowered("tests/backend/epilogue_layers.yaml", o);
  EXPECT_EQ(node(legacy, "c7").lowered->kind, LayerKind::ConvLegacy);  // + relu
  EXPECT_EQ(node(legacy, "c7").lowered->epilogue, ir::Epilogue::kFused);
  EXPECT_EQ(node(legacy, "c3").lowered->kind, LayerKind::ConvGraph);  // + silu: graph only
  EXPECT_EQ(node(legacy, "c3").lowered->epilogue, ir::Epilogue::kFused);
  EXPECT_EQ(node(legacy, "c8").lowered->kind, LayerKind::ConvLegacy);  // + hardswish
  EXPECT_EQ(node(legacy, "c8").lowered->epilogue, ir::Epilogue::kSeparate);
  const ir::Graph graph =
      lowered("tests/backend/epilogue_layers.yaml", options(cudnn::Precision::kFP16));
  EXPECT_EQ(node(graph, "c8").lowered->kind, LayerKind::ConvGraph);
  EXPECT_EQ(node(graph, "c8").lowered->epilogue, ir::Epilogue::kSeparate);
}

TEST(Lowering, DepthwiseConvolutionsTakeZocsKernelUnlessTheTargetSaysOtherwise) {
  const ir::Graph g =
      lowered("tests/backend/depthwise_layers.yaml", options(cudnn::Precision::kFP16));
  EXPECT_EQ(node(g, "dw2").lowered->kind, LayerKind::ConvDepthwise);
  EXPECT_EQ(node(g, "dw2").lowered->weights, ir::WeightLayout::kTapsMajor);
  EXPECT_EQ(node(g, "stem").lowered->kind, LayerKind::ConvGraph);
  cudnn::EmitOptions o = options(cudnn::Precision::kFP16);
  o.depthwise = cudnn::DepthwiseApi::kCudnn;
  const ir::Graph c = lowered("tests/backend/depthwise_layers.yaml", o);
  EXPECT_EQ(node(c, "dw2").lowered->kind, LayerKind::ConvGraph);
  EXPECT_EQ(node(c, "dw2").lowered->weights, ir::WeightLayout::kKRSC);
}

TEST(Lowering, RefusesHalfPrecisionStoredNchwAndAnUnsizableTransposedConv) {
  for (const char* path :
       {"models/lenet.yaml", "tests/backend/conv_transpose_output_padding.yaml"}) {
    Diagnostics d;
    auto g = test::load(test::repo_path(path), d, {});
    ASSERT_TRUE(g);
    cudnn::EmitOptions o = options(cudnn::Precision::kFP16);
    if (std::string(path) == "models/lenet.yaml") o.layout = cudnn::Layout::kNCHW;
    const lower::TargetDesc target = cudnn::lowering_target(o);
    passes::PassOptions popts;
    popts.target = &target;
    EXPECT_FALSE(passes::run_pipeline(*g, d, popts));
    EXPECT_NE(d.render().find(std::string(path).find("lenet") != std::string::npos
                                  ? "stores fp16 activations NHWC only"
                                  : "a transposed convolution whose output_padding is not below "
                                    "its stride"),
              std::string::npos)
        << d.render();
  }
}

// Upsampling and transposed convolutions take their layers; several outputs, an NHWC image among
// them, are lowered (the emitter's output kernel writes them); an upsampling or argmax that only
// a model output reads writes the caller's rows itself: no arena slot, fp32 NCHW.
TEST(Lowering, DenseLayersAndSeveralOutputs) {
  const ir::Graph g = lowered("tests/backend/dense_layers.yaml", options(cudnn::Precision::kFP16));
  EXPECT_EQ(node(g, "bi_scale").lowered->kind, LayerKind::Upsample);
  EXPECT_EQ(node(g, "near_size").lowered->kind, LayerKind::Upsample);
  EXPECT_EQ(node(g, "tconv").lowered->kind, LayerKind::ConvTranspose);
  EXPECT_EQ(node(g, "tconv").lowered->weights, ir::WeightLayout::kKRSC);
  EXPECT_LT(node(g, "tconv_pad").lowered->bias_offset, 0);  // bias: false
  EXPECT_EQ(node(g, "probs").lowered->kind, LayerKind::ChannelSoftmax);
  EXPECT_EQ(node(g, "logp").lowered->kind, LayerKind::ChannelSoftmax);
  ASSERT_EQ(g.outputs.size(), 7u);
  EXPECT_EQ(g.type(g.outputs[0]).layout, ir::Layout::NHWC);
  EXPECT_EQ(node(g, "down_up").lowered->kind, LayerKind::UpsampleOutput);
  EXPECT_EQ(node(g, "probs_up").lowered->kind, LayerKind::UpsampleOutput);
  EXPECT_EQ(node(g, "classes").lowered->kind, LayerKind::ArgmaxOutput);
  EXPECT_EQ(node(g, "best").lowered->kind, LayerKind::ArgmaxOutput);
  for (const char* name : {"down_up", "classes"}) {
    const ir::Value& v = g.values[node(g, name).output];
    EXPECT_LT(v.storage->offset, 0) << name;
    EXPECT_EQ(v.type->dtype, ir::DType::F32) << name;
  }
  EXPECT_EQ(g.type(node(g, "down_up").output).layout, ir::Layout::NCHW);
}

TEST(LoweringVerifier, ACallerOutputWithAnArenaSlotIsCaught) {
  ir::Graph g = lowered("tests/backend/dense_layers.yaml", options(cudnn::Precision::kFP16));
  g.values[node(g, "down_up").output].storage->offset = 0;
  Diagnostics d;
  EXPECT_FALSE(ir::verify(g, d));
  EXPECT_NE(d.render().find("writes the caller's rows but its result is not a model output"),
            std::string::npos)
      << d.render();
}

// --- The verifier's checks of a lowered graph, each on a graph broken for it.

std::string verify_errors(const ir::Graph& g) {
  Diagnostics d;
  EXPECT_FALSE(ir::verify(g, d));
  return d.render();
}

TEST(LoweringVerifier, AcceptsEveryLoweringOfTheModelsAndTheZoo) {
  for (const char* path :
       {"models/lenet.yaml", "models/resnet18.yaml", "models/resnet50.yaml",
        "tests/backend/zoo_layers.yaml", "tests/backend/depthwise_layers.yaml",
        "tests/backend/epilogue_layers.yaml", "tests/backend/ceil_mode_pool.yaml",
        "tests/backend/dense_layers.yaml"}) {
    for (cudnn::Precision p : {cudnn::Precision::kFP32, cudnn::Precision::kTF32,
                               cudnn::Precision::kFP16, cudnn::Precision::kBF16}) {
      for (bool side : {false, true}) {
        const ir::Graph g = lowered(path, options(p, side));  // verifies after the lowering
        EXPECT_TRUE(g.target) << path;
      }
    }
  }
}

TEST(LoweringVerifier, LiveValuesSharingArenaBytesAreCaught) {
  ir::Graph g = lowered("models/resnet50.yaml", options(cudnn::Precision::kFP32, true));
  // A side branch's input is read until its join: no main-branch value may take its bytes.
  const ir::Node& d = node(g, "layer1.0.downsample.0");
  const ir::Node& c2 = node(g, "layer1.0.conv2");  // runs while the side branch may read
  g.values[c2.output].storage->offset = g.values[d.inputs[0]].storage->offset;
  EXPECT_NE(verify_errors(g).find("are live together but share arena bytes"), std::string::npos);
}

TEST(LoweringVerifier, LayoutsAndDtypesALayerDoesNotSupportAreCaught) {
  ir::Graph g = lowered("models/lenet.yaml", options(cudnn::Precision::kFP16));
  g.nodes.front().lowered->kind = LayerKind::InputCopy;  // moves fp32 NCHW only
  const std::string errors = verify_errors(g);
  EXPECT_NE(errors.find("input.copy does not write NHWC images"), std::string::npos) << errors;
  EXPECT_NE(errors.find("input.copy moves f32 only, not f16"), std::string::npos) << errors;
}

TEST(LoweringVerifier, MissingLayersStorageAndUnjoinedSideBranchesAreCaught) {
  ir::Graph g = lowered("models/resnet50.yaml", options(cudnn::Precision::kFP32, true));
  g.nodes[3].lowered.reset();
  g.values[g.nodes[5].output].storage.reset();
  ir::Node& join = const_cast<ir::Node&>(node(g, "layer2.0.conv3"));
  join.lowered->joins.clear();
  const std::string errors = verify_errors(g);
  EXPECT_NE(errors.find("no runtime layer"), std::string::npos) << errors;
  EXPECT_NE(errors.find("has no storage"), std::string::npos) << errors;
  EXPECT_NE(errors.find("side branch 1 runs 1 nodes and is joined 0 times"), std::string::npos)
      << errors;
}

TEST(LoweringVerifier, PaddedChannelsOnlyOnTheInput) {
  ir::Graph g = lowered("models/lenet.yaml", options(cudnn::Precision::kFP16));
  const ir::Node& conv1 = node(g, "conv1");
  g.values[conv1.output].storage->stored_channels += 4;
  EXPECT_NE(verify_errors(g).find("stores 36 channels of 32"), std::string::npos);
}

}  // namespace
}  // namespace zoc
