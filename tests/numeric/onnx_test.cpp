// The ONNX frontend on real exports: torchvision ResNet-18/50 and LeNet written by
// torch.onnx.export (Debian's torch 1.13) through models/export.py --onnx, opsets 13 and 17 with a
// dynamic batch axis, all made by the `reference_data` fixture.
//
//  - Structure: the IR of each .onnx file equals the YAML route's after the inference passes
//    (tests/numeric/ir_compare.h), and before them where the export keeps every layer (the
//    exporter drops LeNet's dropout, which the passes remove from the YAML route too).
//  - Numbers: the reference interpreter with the initializers the file carries (what `zoc run
//    model.onnx` uses) matches PyTorch's output within relative L2 error 1e-5, before and after
//    the passes, at the exported batch and at batch 1 (the batch axis is dynamic).
//  - Weights: what `zoc extract-weights` writes equals export.py's state_dict, tensor by tensor.
//  - A BatchNorm-folded export (the exporter's default mode) is computed correctly too, under the
//    layer names its nodes give.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "compiler/backend/reference/interpreter.h"
#include "compiler/driver/model_loader.h"
#include "compiler/passes/pipeline.h"
#include "compiler/weights/weights.h"
#include "tests/numeric/ir_compare.h"
#include "zoc/io/npy.h"
#include "zoc/io/safetensors.h"

namespace zoc {
namespace {

namespace fs = std::filesystem;

std::string data(const std::string& rel) { return std::string(ZOC_TEST_DATA_DIR) + "/" + rel; }

#define REQUIRE_FILE(file)                                                            \
  ASSERT_TRUE(fs::exists(file)) << file << " is missing: the reference_data fixture " \
                                << "(models/export.py --onnx) did not run"

struct Case {
  const char* yaml;  // models/<yaml>.yaml
  const char* dir;   // testdata/<dir>/model_opset<opset>.onnx
  int opset;
  std::vector<std::pair<std::string, std::string>> sets;
  bool same_before_passes;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.dir << " opset " << c.opset; }

std::string onnx_file(const Case& c) {
  return data(std::string(c.dir) + "/model_opset" + std::to_string(c.opset) + ".onnx");
}

ref::Tensor read_npy(const std::string& path) {
  ref::Tensor t;
  auto v = npy::read_float32(path, &t.shape);
  EXPECT_TRUE(v.ok()) << (v.ok() ? "" : v.error().message);
  if (v.ok()) t.data = std::move(*v);
  return t;
}

// The interpreter on the model's own weights against PyTorch's output, before and after the
// passes, on the exported batch and on its first sample alone.
void expect_matches_pytorch(const std::string& file, const std::string& dir) {
  Diagnostics d;
  auto m = load_model_and_weights(file, d);
  ASSERT_TRUE(m && m->weights) << d.render();
  const ref::Tensor x = read_npy(dir + "/input.npy"), y = read_npy(dir + "/output.npy");
  ASSERT_GE(x.shape.at(0), 2);
  ref::Tensor x1 = x, y1 = y;  // batch 1: the first sample
  x1.shape[0] = y1.shape[0] = 1;
  x1.data.resize(x.data.size() / static_cast<size_t>(x.shape[0]));
  y1.data.resize(y.data.size() / static_cast<size_t>(y.shape[0]));
  for (bool optimized : {false, true}) {
    if (optimized) {
      passes::PassOptions popts;
      popts.verify_each = true;
      ASSERT_TRUE(passes::run_pipeline(m->graph, d, popts)) << d.render();
    }
    for (const ref::Tensor* io : std::initializer_list<const ref::Tensor*>{&x, &x1}) {
      const ref::Tensor& want = io == &x ? y : y1;
      auto out = ref::run(m->graph, *m->weights, *io);
      ASSERT_TRUE(out.ok()) << out.error().message;
      ASSERT_EQ((*out)[0].shape, want.shape);
      const double e = test::rel_l2((*out)[0].data, want.data);
      std::printf("[ numbers  ] %s (%s, batch %ld): rel L2 %.3g against PyTorch\n",
                  fs::path(file).filename().c_str(), optimized ? "after passes" : "before passes",
                  static_cast<long>(io->shape[0]), e);
      EXPECT_LE(e, 1e-5) << file << (optimized ? " after passes" : "");
    }
  }
}

class OnnxModel : public ::testing::TestWithParam<Case> {};

TEST_P(OnnxModel, IrEqualsTheYamlRoute) {
  const Case& c = GetParam();
  REQUIRE_FILE(onnx_file(c));
  Diagnostics d;
  LoadOptions yopts;
  yopts.yaml.overrides = c.sets;
  auto yaml =
      load_verified_model(std::string(ZOC_SOURCE_DIR) + "/models/" + c.yaml + ".yaml", d, yopts);
  auto g = load_verified_model(onnx_file(c), d);
  ASSERT_TRUE(yaml && g) << d.render();
  if (c.same_before_passes) test::expect_same_structure(*yaml, *g, "before passes");
  ASSERT_TRUE(passes::run_pipeline(*yaml, d) && passes::run_pipeline(*g, d)) << d.render();
  test::expect_same_structure(*yaml, *g, "after passes");
}

TEST_P(OnnxModel, MatchesPyTorchWithItsInitializers) {
  const Case& c = GetParam();
  REQUIRE_FILE(onnx_file(c));
  expect_matches_pytorch(onnx_file(c), data(c.dir));
}

// `zoc extract-weights model.onnx` (the same calls) writes export.py's state_dict exactly.
TEST_P(OnnxModel, ExtractedWeightsEqualTheStateDict) {
  const Case& c = GetParam();
  REQUIRE_FILE(onnx_file(c));
  Diagnostics d;
  auto m = load_model_and_weights(onnx_file(c), d);
  ASSERT_TRUE(m && m->weights) << d.render();
  const std::string out =
      ::testing::TempDir() + "zoc_onnx_" + c.dir + "_" + std::to_string(c.opset) + ".safetensors";
  ASSERT_TRUE(save_weights(m->graph, *m->weights, out).ok());
  auto mine = st::File::open(out);
  auto ref = st::File::open(data(std::string(c.dir) + "/weights.safetensors"));
  ASSERT_TRUE(mine.ok() && ref.ok());
  ASSERT_EQ(mine->tensors().size(), ref->tensors().size());
  for (const st::TensorView& t : ref->tensors()) {
    const st::TensorView* mt = mine->find(t.name);
    ASSERT_NE(mt, nullptr) << t.name;
    EXPECT_EQ(mt->dtype, t.dtype) << t.name;
    EXPECT_EQ(mt->shape, t.shape) << t.name;
    ASSERT_EQ(mt->nbytes, t.nbytes) << t.name;
    EXPECT_EQ(std::memcmp(mt->data, t.data, t.nbytes), 0) << t.name;
  }
  // And the file loads as --weights, strictly.
  EXPECT_TRUE(load_weights(m->graph, out, d, {.strict = true})) << d.render();
  fs::remove(out);
}

INSTANTIATE_TEST_SUITE_P(
    Models, OnnxModel,
    ::testing::Values(Case{"resnet18", "resnet18_64_onnx", 13, {{"resolution", "64"}}, true},
                      Case{"resnet18", "resnet18_64_onnx", 17, {{"resolution", "64"}}, true},
                      Case{"resnet50", "resnet50_64_onnx", 13, {{"resolution", "64"}}, true},
                      Case{"resnet50", "resnet50_64_onnx", 17, {{"resolution", "64"}}, true},
                      Case{"lenet", "lenet_onnx", 13, {}, false},
                      Case{"lenet", "lenet_onnx", 17, {}, false}),
    [](const auto& p) {
      return std::string(p.param.dir) + "_opset" + std::to_string(p.param.opset);
    });

// The exporter's default mode folds each BatchNorm into the convolution before it and names the
// folded tensors "onnx::Conv_193": no state_dict names to take, so layers are named after their
// nodes' module scopes, and the numbers must still be PyTorch's.
TEST(OnnxFolded, BatchNormFoldedByTheExporterIsStillCorrect) {
  const std::string file = data("resnet18_64_onnx/model_folded.onnx");
  REQUIRE_FILE(file);
  expect_matches_pytorch(file, data("resnet18_64_onnx"));
  Diagnostics d;
  auto g = load_verified_model(file, d);
  ASSERT_TRUE(g) << d.render();
  for (const ir::Node& n : g->nodes) EXPECT_NE(n.op, ir::OpKind::BatchNorm2d) << n.name;
  for (const char* name : {"conv1", "layer1.0.conv2", "layer2.0.downsample.0", "fc"}) {
    const ir::Node* n = g->find_node(name);
    ASSERT_NE(n, nullptr) << name;
    if (n->op == ir::OpKind::Conv2d) {
      EXPECT_TRUE(n->attrs.b("bias")) << name;
    }
  }
}

// Names follow the module scopes torch.onnx.export writes, as the TorchScript frontend names
// layers; locations name the ONNX node.
TEST(OnnxNames, ModuleScopesAndNodeLocations) {
  const std::string file = data("resnet50_64_onnx/model_opset17.onnx");
  REQUIRE_FILE(file);
  Diagnostics d;
  auto g = load_verified_model(file, d);
  ASSERT_TRUE(g) << d.render();
  for (const char* name :
       {"layer3.4.relu", "layer3.4.relu_1", "layer3.4.relu_2", "layer3.4.add",
        "layer1.0.downsample.0", "layer1.0.downsample.1", "maxpool", "avgpool", "flatten", "fc"}) {
    EXPECT_NE(g->find_node(name), nullptr) << name;
  }
  const std::string loc = g->find_node("layer3.4.conv2")->loc.str();
  const std::string head = file + ": node '/layer3/layer3.4/conv2/Conv' (Conv, #";
  EXPECT_EQ(loc.rfind(head, 0), 0u) << loc;
  EXPECT_EQ(loc.back(), ')') << loc;
}

}  // namespace
}  // namespace zoc
